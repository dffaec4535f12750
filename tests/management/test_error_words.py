"""Management errors open with qdrouterd's words, which scripts and tests match: "Not Found" and
"Name conflicts with an existing entity" for the configuration the router core keeps
(addresses, link routes, auto-links), "No entity with name=N" for the other entities, the
role a router's mode cannot use, and a log file that cannot be opened."""

from __future__ import annotations

from pathlib import Path

from tests.management.mgmt import ADDRESS, MgmtClient
from tests.ports import free_port
from tests.router.routerproc import run_qdrouter

LISTENER = "org.apache.qpid.dispatch.listener"
CONNECTOR = "org.apache.qpid.dispatch.connector"
LOG = "org.apache.qpid.dispatch.log"
STANDALONE_WORDS = "role='standalone' not allowed to connect to or accept connections from other routers."


def test_missing_address_is_not_found(mgmt: MgmtClient) -> None:
    reply = mgmt.request("READ", type=ADDRESS, name="no-such-address")
    assert reply.status == 404
    assert reply.description.startswith("Not Found"), reply


def test_taken_address_name_conflicts(mgmt: MgmtClient) -> None:
    mgmt.create(ADDRESS, "taken", {"prefix": "taken.one", "distribution": "closest"})
    reply = mgmt.request("CREATE", type=ADDRESS, name="taken", body={"prefix": "taken.two"})
    assert reply.status == 400
    assert reply.description.startswith("Name conflicts with an existing entity"), reply
    # The first one is still there, unchanged.
    rows = [r for r in mgmt.query(ADDRESS, ["name", "prefix"]) if r["name"] == "taken"]
    assert rows == [{"name": "taken", "prefix": "taken.one"}]


def test_missing_listener_and_identity_say_no_entity_with(mgmt: MgmtClient) -> None:
    reply = mgmt.request("READ", type=LISTENER, name="no-such-listener")
    assert reply.status == 404
    assert reply.description.startswith("No entity with name=no-such-listener"), reply
    reply = mgmt.request("READ", identity="no-such-identity")
    assert reply.status == 404
    assert reply.description.startswith("No entity with identity=no-such-identity"), reply


def test_inter_router_connector_on_a_standalone_router_is_refused(mgmt: MgmtClient) -> None:
    reply = mgmt.request("CREATE", type=CONNECTOR, name="peer",
                         body={"host": "127.0.0.1", "port": str(free_port()), "role": "inter-router"})
    assert reply.status == 400
    assert reply.description.startswith(STANDALONE_WORDS), reply
    assert mgmt.request("READ", type=CONNECTOR, name="peer").status == 404


def test_log_file_that_cannot_be_opened_is_named(mgmt: MgmtClient, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "router.log"
    reply = mgmt.request("UPDATE", type=LOG, name="log/DEFAULT", body={"outputFile": str(missing)})
    assert reply.status >= 400
    assert f"Failed to open log file '{missing}'" in reply.description, reply


def test_config_with_an_inter_router_listener_on_a_standalone_router_does_not_start(tmp_path: Path) -> None:
    config = tmp_path / "standalone.conf"
    config.write_text("router {\n    mode: standalone\n    id: S\n}\n"
                      f"listener {{\n    host: 127.0.0.1\n    port: {free_port()}\n    role: inter-router\n}}\n")
    done = run_qdrouter(["-c", str(config)])
    assert done.returncode != 0
    assert STANDALONE_WORDS in done.stderr + done.stdout
