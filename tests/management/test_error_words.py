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
LINK_ROUTE = "org.apache.qpid.dispatch.router.config.linkRoute"
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
                      f"listener {{\n    host: 127.0.0.1\n    port: {free_port()}\n"
                      "    role: inter-router\n}\n")
    done = run_qdrouter(["-c", str(config)])
    assert done.returncode != 0
    assert STANDALONE_WORDS in done.stderr + done.stdout


def test_entity_read_under_another_type_is_a_bad_request(mgmt: MgmtClient) -> None:
    reply = mgmt.request("READ", type=CONNECTOR, name="log/DEFAULT")
    assert reply.status == 400
    assert reply.description == f"Entity type '{LOG}' does not extend requested type '{CONNECTOR}'", reply


def test_node_operation_aimed_at_another_type_is_a_bad_request(mgmt: MgmtClient) -> None:
    # `type` names the entity a request is for; QUERY is the management node's operation.
    reply = mgmt.request("QUERY", type=LISTENER, body={"attributeNames": ["name"]})
    assert reply.status == 400
    assert reply.description == f"{LISTENER}: No name or identity provided", reply


def test_query_of_every_type_answers_every_attribute(mgmt: MgmtClient) -> None:
    body = mgmt.ok("QUERY", body={"attributeNames": []})
    columns = body["attributeNames"]
    assert {"name", "identity", "type", "module", "port", "distribution", "linkName"} <= set(columns)
    rows = [dict(zip(columns, row)) for row in body["results"]]
    default_log = [row for row in rows if row["name"] == "log/DEFAULT"]
    assert len(default_log) == 1 and default_log[0]["module"] == "DEFAULT"


def test_default_log_shows_its_timestamp_and_source_settings(mgmt: MgmtClient) -> None:
    row = mgmt.ok("READ", type=LOG, name="log/DEFAULT")
    assert (row["includeTimestamp"], row["includeSource"]) == (True, False)


def test_empty_prefix_or_pattern_is_refused_and_management_still_answers(mgmt: MgmtClient) -> None:
    # An empty prefix would match every address, $management's own included.
    for entity_type, attributes, words in (
            (LINK_ROUTE, {"prefix": "", "direction": "in"}, "Prefix must be a non-empty string type"),
            (LINK_ROUTE, {"pattern": "", "direction": "out"}, "Pattern must be a non-empty string type"),
            (ADDRESS, {"prefix": ""}, "Prefix must be a non-empty string type")):
        reply = mgmt.request("CREATE", type=entity_type, name="everything", body=attributes)
        assert reply.status == 400 and words in reply.description, reply
    assert [r["name"] for r in mgmt.query(LINK_ROUTE, ["name"])] == []
    assert mgmt.request("READ", type=LOG, name="log/DEFAULT").status == 200
