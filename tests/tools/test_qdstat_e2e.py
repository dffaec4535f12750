"""qdstat against a real router process: every view, the output formats, and the error lines."""

from __future__ import annotations

import csv
import io
from typing import Iterator, List

import pytest
from proton.utils import BlockingConnection

from .conftest import Result, RouterProcess, free_port, run_tool


def qdstat(router: RouterProcess, *args: str) -> Result:
    r = run_tool("qdstat", "-b", router.bus, *args)
    assert r.code == 0, r.err
    assert r.err == ""
    return r


def heads_of(out: str) -> List[str]:
    """The column headings of a text table (the line under the title)."""
    return out.splitlines()[1].split()


def rows_of(out: str) -> List[List[str]]:
    return [line.split() for line in out.splitlines()[3:]]


@pytest.fixture
def subscriber(router: RouterProcess) -> Iterator[None]:
    """A receiver on my-address held open for the test."""
    conn = BlockingConnection(f"amqp://{router.bus}", timeout=5)
    conn.create_receiver("my-address")
    yield
    conn.close()


@pytest.mark.parametrize(("option", "title", "heads"), [
    ("-g", "Router Statistics", ["attr", "value"]),
    ("-c", "Connections", ["id", "host", "container", "role", "dir", "security", "authentication",
                           "blocked"]),
    ("-l", "Router Links", ["type", "dir", "conn", "id", "id", "peer", "class", "addr", "phs", "cap",
                            "undel", "unsettled", "deliveries", "admin", "oper"]),
    ("-a", "Router Addresses", ["class", "addr", "phs", "distrib", "in-proc", "local", "remote", "cntnr",
                                "in", "out", "thru", "to-proc", "from-proc"]),
    ("-n", "Routers in the Network", ["router-id", "next-hop", "link", "cost", "neighbors"]),
    ("--connectors", "Connectors", ["name", "host", "role", "cost", "status", "message"]),
    ("--autolinks", "AutoLinks", ["addr", "dir", "phase", "link", "status", "lastErr"]),
    ("--linkroutes", "Link Routes", ["prefix", "dir", "distrib", "status"]),
    ("--vhosts", "Vhosts", ["hostname", "maxConnections", "maxMessageSize", "maxConnectionsPerUser",
                            "maxConnectionsPerHost", "allowUnknownUser", "groups"]),
    ("-m", "Types", ["type", "size", "batch", "thread-max", "total", "in-threads", "rebal-in", "rebal-out"]),
])
def test_view_title_and_columns(router: RouterProcess, option: str, title: str, heads: List[str]) -> None:
    out = qdstat(router, option).out
    assert out.splitlines()[0] == title
    assert heads_of(out) == heads
    assert set(out.splitlines()[2].strip()) == {"="}


def test_vhostgroups_title_and_columns(router: RouterProcess) -> None:
    out = qdstat(router, "--vhostgroups").out
    assert out.splitlines()[0] == "Vhost Groups"
    assert heads_of(out)[:4] == ["vhost", "group", "users", "remoteHosts"]
    assert rows_of(out)[0][:4] == ["example.com", "admins", "alice,bob", "*"]


def test_default_view_is_general(router: RouterProcess) -> None:
    labels = [line[:20] for line in qdstat(router).out.splitlines()]
    assert labels == [line[:20] for line in qdstat(router, "-g").out.splitlines()]


def test_general_values(router: RouterProcess) -> None:
    lines = qdstat(router, "-g").out.splitlines()
    column = lines[1].index("value")
    values = {line[:column].strip(): line[column:].strip() for line in lines[3:]}
    assert values["Router Id"] == "R1"
    assert values["Mode"] == "standalone"
    assert int(values["Connections"]) >= 1


def test_connections_show_qdstat_itself(router: RouterProcess) -> None:
    rows = rows_of(qdstat(router, "-c").out)
    mine = [row for row in rows if row[2].startswith("qdstat-")]
    assert len(mine) == 1
    assert mine[0][1].startswith("127.0.0.1:")
    assert mine[0][3:] == ["normal", "in", "no-security", "anonymous-user", "-"]


def test_links_show_the_management_request_and_reply_links(router: RouterProcess) -> None:
    rows = rows_of(qdstat(router, "-l").out)
    endpoint_in = [row for row in rows if row[:2] == ["endpoint", "in"]]
    assert any("$management" in row for row in endpoint_in), rows
    assert any(row[:2] == ["endpoint", "out"] for row in rows)


def test_addresses_show_management_and_a_subscriber(router: RouterProcess, subscriber: None) -> None:
    rows = rows_of(qdstat(router, "-a").out)
    mine = [row for row in rows if "my-address" in row]
    assert len(mine) == 1
    cls, addr, phase, _distrib, in_proc, local = mine[0][:6]
    assert (cls, addr, phase, in_proc, local) == ("mobile", "my-address", "0", "0", "1")
    assert any(row[:3] == ["mobile", "$management", "0"] for row in rows), rows


def test_autolinks_and_linkroutes_show_configured_entities(router: RouterProcess) -> None:
    autolinks = rows_of(qdstat(router, "--autolinks").out)
    assert [row[:2] for row in autolinks] == [["queue.first", "in"], ["queue.first", "out"]]
    linkroutes = rows_of(qdstat(router, "--linkroutes").out)
    assert [row[:2] for row in linkroutes] == [["lr", "in"]]


def test_vhosts_show_configured_vhost(router: RouterProcess) -> None:
    rows = rows_of(qdstat(router, "--vhosts").out)
    assert rows[0][0] == "example.com"
    assert rows[0][1] == "10"
    assert rows[0][-1] == "1"  # one group


def test_limit(router: RouterProcess) -> None:
    assert len(rows_of(qdstat(router, "-a").out)) > 1
    assert len(rows_of(qdstat(router, "-a", "--limit", "1").out)) == 1


def test_csv(router: RouterProcess) -> None:
    rows = list(csv.reader(io.StringIO(qdstat(router, "-a", "--csv").out)))
    assert rows[0] == ["class", "addr", "phs", "distrib", "in-proc", "local", "remote", "cntnr", "in",
                       "out", "thru", "to-proc", "from-proc"]
    assert any(row[:3] == ["mobile", "$management", "0"] for row in rows[1:])


def test_json(router: RouterProcess) -> None:
    data = qdstat(router, "-c", "--json").json()
    assert isinstance(data, list)
    mine = [c for c in data if c["container"].startswith("qdstat-")]
    assert mine and mine[0]["authentication"] == "anonymous-user"
    general = {row["attr"]: row["value"] for row in qdstat(router, "--json").json()}
    assert general["Router Id"] == "R1"
    assert isinstance(general["Connections"], int)


def test_bus_url_forms(router: RouterProcess) -> None:
    assert "R1" in run_tool("qdstat", "-b", f"amqp://{router.bus}").out
    assert "R1" in run_tool("qdstat", "--bus", router.bus).out


def test_router_option_reaches_own_agent_through_topological_address(router: RouterProcess) -> None:
    assert "R1" in qdstat(router, "-r", "R1", "-g").out


def test_connection_refused_is_one_line() -> None:
    port = free_port()
    r = run_tool("qdstat", "-b", f"127.0.0.1:{port}", "-a")
    assert r.code == 1
    assert r.out == ""
    assert r.err == f"qdstat: error: cannot connect to 127.0.0.1:{port}: connection refused\n"


def test_connect_timeout_is_one_line(silent_port: int) -> None:
    r = run_tool("qdstat", "-b", f"127.0.0.1:{silent_port}", "-t", "0.5")
    assert r.code == 1
    assert r.err == f"qdstat: error: timed out after 0.5s connecting to 127.0.0.1:{silent_port}\n"


def test_unknown_router_times_out_with_one_line(router: RouterProcess) -> None:
    r = run_tool("qdstat", "-b", router.bus, "-r", "NO-SUCH-ROUTER", "-t", "3")
    assert r.code == 1
    assert r.err.count("\n") == 1 and r.err.startswith("qdstat: error: "), r.err
    assert "_topo/0/NO-SUCH-ROUTER/$management" in r.err
