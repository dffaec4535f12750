"""UPDATE of log entities changes log levels at run time; GET-LOG shows the effect."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.management.mgmt import LOG, MgmtClient, assert_routing
from tests.router.amqpclient import Net
from tests.router.routerproc import Router


def levels(mgmt: MgmtClient) -> set:
    return {entry[1] for entry in mgmt.ok("GET-LOG")}


def test_update_default_log_to_debug_shows_debug_entries(mgmt: MgmtClient, router: Router, net: Net) -> None:
    mgmt.ok("GET-TYPES")
    assert "debug" not in levels(mgmt), "debug entries at the default level info+"
    reply = mgmt.request("UPDATE", type="log", name="log/DEFAULT", body={"enable": "debug+"})
    assert reply.status == 200, reply
    assert reply.body["enable"] == "debug+"
    assert reply.body["type"] == LOG
    mgmt.ok("GET-TYPES")
    assert_routing(net, router.url)
    entries = mgmt.ok("GET-LOG")
    debug = [e for e in entries if e[1] == "debug"]
    assert debug, f"no debug entries after enable=debug+: {entries[-5:]}"
    assert mgmt.ok("READ", type="log", identity="log/DEFAULT")["enable"] == "debug+"

    back = mgmt.request("UPDATE", type=LOG, identity="log/DEFAULT", body={"enable": "info+"})
    assert back.status == 200, back
    count = len([e for e in mgmt.ok("GET-LOG") if e[1] == "debug"])
    mgmt.ok("GET-TYPES")
    assert len([e for e in mgmt.ok("GET-LOG") if e[1] == "debug"]) == count, "debug still logged"


@pytest.mark.c_router_bug("qdrouterd answers a bad 'enable' value with 500 Internal Server Error (CError), a"
                          " server fault for a client's mistake")
def test_update_log_with_bad_enable_is_refused_and_keeps_level(mgmt: MgmtClient) -> None:
    reply = mgmt.request("UPDATE", type="log", name="log/DEFAULT", body={"enable": "loud+"})
    assert reply.status == 400, reply
    assert "enable" in reply.description
    assert mgmt.ok("READ", type="log", name="log/DEFAULT")["enable"] == "info+"


def test_delete_of_log_entity_is_refused(mgmt: MgmtClient) -> None:
    reply = mgmt.request("DELETE", type="log", name="log/AGENT")
    assert reply.status == 501 and "DELETE" in reply.description, reply  # as qdrouterd
    assert "log/AGENT" in [r["name"] for r in mgmt.query("log", ["name"])]


@pytest.mark.c_router_bug("qdrouterd answers an outputFile it cannot open with 500 Internal Server Error "
                          "(CError)")
def test_update_log_output_file_that_cannot_be_opened_names_output_file(mgmt: MgmtClient) -> None:
    reply = mgmt.request("UPDATE", type="log", name="log/DEFAULT",
                         body={"enable": "info+", "outputFile": "/nonexistent/dir/x.log"})
    assert reply.status == 400, reply
    assert "outputFile" in reply.description, reply
    after = mgmt.ok("READ", type="log", name="log/DEFAULT")
    assert after.get("outputFile") is None and after["enable"] == "info+"


def test_a_modules_own_output_file_takes_its_records(mgmt: MgmtClient, router: Router, net: Net,
                                                      tmp_path: Path) -> None:
    agent_log = tmp_path / "agent.log"
    reply = mgmt.request("UPDATE", type=LOG, name="log/AGENT",
                         body={"enable": "trace+", "outputFile": str(agent_log)})
    assert reply.status == 200, reply
    for _ in range(3):
        mgmt.ok("GET-TYPES")
    net.wait(lambda: agent_log.exists() and "AGENT" in agent_log.read_text(), 10,
             "the agent's records in its own file")
    # Only the agent's records (a record's first line names its module; a trace may go on).
    modules = set(re.findall(r"^\d{4}-\d\d-\d\d \S+ \+0000 (\w+) \(", agent_log.read_text(), re.M))
    assert modules == {"AGENT"}, modules
    assert_routing(net, router.url)


def test_include_timestamp_and_source_shape_a_modules_lines(mgmt: MgmtClient, tmp_path: Path) -> None:
    agent_log = tmp_path / "agent.log"
    reply = mgmt.request("UPDATE", type=LOG, name="log/AGENT",
                         body={"enable": "debug+", "outputFile": str(agent_log),
                               "includeTimestamp": False, "includeSource": True})
    assert reply.status == 200, reply
    mgmt.ok("GET-TYPES")
    def agent_lines() -> list:
        text = agent_log.read_text() if agent_log.exists() else ""
        return [line for line in text.splitlines() if line.startswith("AGENT (")]

    mgmt.net.wait(lambda: bool(agent_lines()), 10, "the agent's lines")
    text = agent_log.read_text()
    assert not re.search(r"^\d{4}-\d\d-\d\d .*AGENT \(", text, re.M), text[-1000:]  # no time first
    assert re.search(r" \(\S+:\d+\)$", text, re.M), text[-1000:]  # a record's source file and line
