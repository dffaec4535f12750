"""qdmanage against a real router process: every operation, and its one-line errors."""

from __future__ import annotations

import json
import socket

import pytest

from .conftest import Result, RouterProcess, free_port, run_tool

LISTENER = "org.apache.qpid.dispatch.listener"


def qdmanage(router: RouterProcess, *args: str, stdin: str | None = None) -> Result:
    r = run_tool("qdmanage", "-b", router.bus, *args, stdin=stdin)
    assert r.code == 0, r.err
    assert r.err == ""
    return r


def fails(router: RouterProcess, *args: str) -> str:
    """The single stderr line of a qdmanage run that must fail with exit status 1."""
    r = run_tool("qdmanage", "-b", router.bus, *args)
    assert r.code == 1, (r.out, r.err)
    assert r.err.count("\n") == 1 and r.err.startswith("qdmanage: error: "), r.err
    assert "Traceback" not in r.err
    return r.err.rstrip("\n")


def test_query_by_type(router: RouterProcess) -> None:
    listeners = qdmanage(router, "query", "--type", "listener").json()
    assert [entity["port"] for entity in listeners] == [str(router.port)]
    assert listeners[0]["type"] == LISTENER
    assert {"name", "identity", "host", "saslMechanisms"} <= set(listeners[0])


def test_query_named_attributes_and_long_type(router: RouterProcess) -> None:
    rows = qdmanage(router, "query", f"--type={LISTENER}", "port", "host").json()
    assert rows == [{"port": str(router.port), "host": "127.0.0.1"}]


def test_query_all_types(router: RouterProcess) -> None:
    types = {entity["type"] for entity in qdmanage(router, "query").json()}
    assert {"org.apache.qpid.dispatch.router", LISTENER, "org.apache.qpid.dispatch.connection"} <= types


def test_create_read_delete_listener(router: RouterProcess) -> None:
    port = free_port()
    created = qdmanage(router, "create", "type=listener", f"port={port}", "host=127.0.0.1",
                       "name=extra", "saslMechanisms=ANONYMOUS").json()
    assert (created["name"], created["port"], created["type"]) == ("extra", str(port), LISTENER)
    # The new listener really listens.
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert qdmanage(router, "read", "--type", "listener", "--name", "extra").json()["port"] == str(port)
    by_identity = qdmanage(router, "read", "--identity", created["identity"]).json()
    assert by_identity["name"] == "extra"
    # A bare argument is an identity, or a name when no identity matches.
    assert qdmanage(router, "read", "extra").json()["identity"] == created["identity"]
    assert qdmanage(router, "delete", "--type", "listener", "--name", "extra").out == ""
    err = fails(router, "read", "--type", "listener", "--name", "extra")
    assert err.startswith("qdmanage: error: NotFound: ") and "name=extra" in err


def test_update_log_as_in_the_book(router: RouterProcess) -> None:
    updated = qdmanage(router, "update", "log/DEFAULT", "enable=debug+").json()
    assert updated["enable"] == "debug+"
    assert qdmanage(router, "read", "--identity", "log/DEFAULT").json()["enable"] == "debug+"
    qdmanage(router, "update", "--type", "log", "--name", "log/DEFAULT", "enable=info+")


def test_update_not_allowed_is_one_line(router: RouterProcess) -> None:
    err = fails(router, "update", "--type", "listener", "--identity", f"listener/127.0.0.1:{router.port}",
                "cost=5")
    assert err.startswith("qdmanage: error: NotImplemented: Operation 'UPDATE' not implemented")


def test_create_from_stdin_map_and_list(router: RouterProcess) -> None:
    one = qdmanage(router, "create", "--type", "address", "--stdin",
                   stdin=json.dumps({"prefix": "stdin.one", "distribution": "multicast"})).json()
    assert (one["prefix"], one["distribution"]) == ("stdin.one", "multicast")
    many = qdmanage(router, "create", "--stdin", stdin=json.dumps([
        {"type": "address", "prefix": "stdin.two", "name": "two"},
        {"type": "router.config.address", "prefix": "stdin.three", "distribution": "balanced"},
    ])).json()
    assert [m["prefix"] for m in many] == ["stdin.two", "stdin.three"]
    assert many[0]["name"] == "two"
    prefixes = {a["prefix"] for a in qdmanage(router, "query", "--type", "address", "prefix").json()}
    assert {"stdin.one", "stdin.two", "stdin.three"} <= prefixes
    for entity in [one, *many]:
        qdmanage(router, "delete", "--identity", entity["identity"])


def test_update_from_stdin(router: RouterProcess) -> None:
    qdmanage(router, "update", "--identity", "log/AGENT", "--stdin", stdin='{"enable": "trace+"}')
    assert qdmanage(router, "read", "--identity", "log/AGENT").json()["enable"] == "trace+"


def test_get_types(router: RouterProcess) -> None:
    types = qdmanage(router, "get-types").json()
    assert LISTENER in types and isinstance(types[LISTENER], list)
    only = qdmanage(router, "get-types", "--type", "listener").json()
    assert list(only) == [LISTENER]


def test_get_attributes(router: RouterProcess) -> None:
    attrs = qdmanage(router, "get-attributes", "--type", "listener").json()
    assert {"name", "identity", "type", "host", "port"} <= set(attrs[LISTENER])


def test_get_operations(router: RouterProcess) -> None:
    ops = qdmanage(router, "get-operations", "type=listener").json()
    assert {"CREATE", "READ", "DELETE"} <= set(ops[LISTENER])


def test_get_annotations(router: RouterProcess) -> None:
    assert isinstance(qdmanage(router, "get-annotations").json(), dict)


def test_get_mgmt_nodes_standalone_is_empty(router: RouterProcess) -> None:
    assert qdmanage(router, "get-mgmt-nodes").json() == []


def test_get_schema_and_json_schema(router: RouterProcess) -> None:
    schema = qdmanage(router, "get-schema").json()
    assert "entityTypes" in schema
    json_schema = qdmanage(router, "get-json-schema").json()
    assert isinstance(json_schema, dict) and json_schema


@pytest.mark.parametrize("limit_args", [["--limit", "2"], ["limit=2"]])
def test_get_log(router: RouterProcess, limit_args: list) -> None:
    entries = qdmanage(router, "get-log", *limit_args).json()
    assert 1 <= len(entries) <= 2
    module, level, text = entries[0][:3]
    assert isinstance(module, str) and isinstance(level, str) and isinstance(text, str)


def test_unknown_type_is_a_4xx_on_one_line(router: RouterProcess) -> None:
    err = fails(router, "query", "--type", "nosuch")
    assert err.startswith("qdmanage: error: ")
    assert "nosuch" in err


def test_a_misspelt_operation_gets_a_did_you_mean(router: RouterProcess) -> None:
    # As a misspelt type or attribute does: the router names what was probably meant.
    err = fails(router, "qeury", "--type", "listener")
    assert "QEURY" in err and "did you mean 'QUERY'?" in err, err


def test_autolink_create_answers_what_a_query_says(router: RouterProcess) -> None:
    created = json.loads(qdmanage(router, "create", "--type", "autoLink", "--name", "al",
                                  "address=q", "direction=in", "connection=broker").out)
    queried = json.loads(qdmanage(router, "query", "--type", "autoLink").out)
    row = next(r for r in queried if r["name"] == "al")
    assert (created["phase"], created["operStatus"]) == (row["phase"], row["operStatus"]) == (1, "inactive")
    qdmanage(router, "delete", "--type", "autoLink", "--name", "al")


def test_unknown_entity_is_not_found(router: RouterProcess) -> None:
    err = fails(router, "delete", "--type", "listener", "--name", "x")
    assert err.startswith("qdmanage: error: NotFound: ") and "name=x" in err


def test_create_invalid_attribute_is_bad_request(router: RouterProcess) -> None:
    err = fails(router, "create", "--type", "listener", "port=notaport", "bogusAttribute=1")
    assert err.startswith("qdmanage: error: BadRequest: ")


def test_connection_refused_is_one_line() -> None:
    port = free_port()
    r = run_tool("qdmanage", "-b", f"127.0.0.1:{port}", "query", "--type", "listener")
    assert (r.code, r.out) == (1, "")
    assert r.err == f"qdmanage: error: cannot connect to 127.0.0.1:{port}: connection refused\n"


def test_timeout_is_one_line(silent_port: int) -> None:
    r = run_tool("qdmanage", "-b", f"127.0.0.1:{silent_port}", "-t", "0.5", "get-types")
    assert r.code == 1
    assert r.err == f"qdmanage: error: timed out after 0.5s connecting to 127.0.0.1:{silent_port}\n"
