"""Node operations of the management agent: QUERY, GET-TYPES, GET-ATTRIBUTES,
GET-OPERATIONS, GET-ANNOTATIONS, GET-MGMT-NODES, GET-SCHEMA, GET-JSON-SCHEMA, GET-LOG."""

from __future__ import annotations

import json
import time

import pytest

from tests.management.mgmt import ADDRESS, LISTENER, LOG, ROUTER, MgmtClient
from tests.router.amqpclient import Net
from tests.router.routerproc import Router

AUTOLINK = "org.apache.qpid.dispatch.router.config.autoLink"


def test_get_types_lists_every_type_with_its_bases(mgmt: MgmtClient) -> None:
    body = mgmt.ok("GET-TYPES")
    assert isinstance(body, dict)
    for t in (AUTOLINK, LISTENER, ADDRESS, LOG, ROUTER, "org.apache.qpid.dispatch.connection",
              "org.apache.qpid.dispatch.router.link", "org.apache.qpid.dispatch.router.address",
              "org.apache.qpid.dispatch.router.node", "org.apache.qpid.dispatch.management"):
        assert t in body, f"GET-TYPES lacks {t}"
    assert all(isinstance(v, list) for v in body.values())
    assert "org.apache.qpid.dispatch.configurationEntity" in body[LISTENER]


@pytest.mark.parametrize("entity_type", ["listener", LISTENER])
def test_get_types_filtered_by_short_or_long_name(mgmt: MgmtClient, entity_type: str) -> None:
    body = mgmt.ok("GET-TYPES", props={"entityType": entity_type})
    assert list(body) == [LISTENER]


def test_get_attributes_of_listener_includes_port(mgmt: MgmtClient) -> None:
    body = mgmt.ok("GET-ATTRIBUTES", props={"entityType": "listener"})
    assert list(body) == [LISTENER]
    assert {"port", "host", "name", "identity", "type", "maxFrameSize"} <= set(body[LISTENER])


def test_get_attributes_without_filter_covers_all_types(mgmt: MgmtClient) -> None:
    body = mgmt.ok("GET-ATTRIBUTES")
    assert "prefix" in body[ADDRESS]
    assert "enable" in body[LOG]
    assert set(body) == set(mgmt.ok("GET-TYPES"))


def test_get_operations_of_listener_includes_create_and_delete(mgmt: MgmtClient) -> None:
    body = mgmt.ok("GET-OPERATIONS", props={"entityType": LISTENER})
    assert list(body) == [LISTENER]
    assert {"CREATE", "DELETE"} <= set(body[LISTENER])
    assert "UPDATE" in mgmt.ok("GET-OPERATIONS", props={"entityType": "log"})[LOG]


def test_get_annotations_is_an_empty_map(mgmt: MgmtClient) -> None:
    # No type has annotations; qdrouterd answers {} too, whatever type is asked.
    assert mgmt.ok("GET-ANNOTATIONS") == {}
    assert mgmt.ok("GET-ANNOTATIONS", props={"entityType": "address"}) == {}


def test_get_mgmt_nodes_of_standalone_router_is_empty(mgmt: MgmtClient) -> None:
    assert mgmt.ok("GET-MGMT-NODES") == []


def test_get_schema_describes_entity_types(mgmt: MgmtClient) -> None:
    body = mgmt.ok("GET-SCHEMA")
    assert body["prefix"] == "org.apache.qpid.dispatch"
    listener = body["entityTypes"]["listener"]
    assert "port" in listener["attributes"]
    assert {"CREATE", "DELETE"} <= set(listener["operations"])
    # Keyed as qdrouterd keys them: the router core's configuration entities by their section.
    auto_link = body["entityTypes"]["autoLink"]
    assert auto_link["fullyQualifiedType"] == "org.apache.qpid.dispatch.router.config.autoLink"
    assert "type" not in auto_link["attributes"] and auto_link["attributes"]["name"]["unique"] is True
    assert body["entityTypes"]["router"]["attributes"]["acceptedDeliveries"]["graph"] is True


def test_get_json_schema_parses_as_json(mgmt: MgmtClient) -> None:
    body = mgmt.ok("GET-JSON-SCHEMA")
    assert isinstance(body, str)
    schema = json.loads(body)
    assert schema["prefix"] == "org.apache.qpid.dispatch"
    assert "port" in schema["entityTypes"]["listener"]["attributes"]


def test_get_log_entries_have_module_level_text_file_line_timestamp(mgmt: MgmtClient) -> None:
    body = mgmt.ok("GET-LOG")
    assert isinstance(body, list) and body, "no log entries at all (startup logs at info)"
    now = time.time()
    for entry in body:
        assert isinstance(entry, list) and len(entry) == 6, entry
        module, level, text, file, line, timestamp = entry
        assert isinstance(module, str) and module
        assert level in ("trace", "debug", "info", "notice", "warning", "error", "critical"), entry
        assert isinstance(text, str)
        assert file is None or isinstance(file, str)
        assert line is None or isinstance(line, int)
        assert isinstance(timestamp, (int, float)) and now - 3600 < timestamp <= now + 5, entry
    assert any("R1" in e[2] for e in body), "the startup log line naming the router is missing"


def test_get_log_limit(mgmt: MgmtClient) -> None:
    every = mgmt.ok("GET-LOG")
    assert len(every) >= 2
    assert len(mgmt.ok("GET-LOG", props={"limit": 1})) == 1


def test_query_returns_attribute_names_and_rows_of_the_same_length(mgmt: MgmtClient) -> None:
    body = mgmt.ok("QUERY", props={"entityType": "log"}, body={"attributeNames": ["name", "enable"]})
    assert body["attributeNames"] == ["name", "enable"]
    assert body["results"], "no log entities"
    assert all(len(row) == 2 for row in body["results"])
    assert ["log/DEFAULT", "info+"] in body["results"]


def test_query_with_empty_attribute_names_returns_all_attributes(mgmt: MgmtClient) -> None:
    body = mgmt.ok("QUERY", props={"entityType": "listener"}, body={"attributeNames": []})
    names = body["attributeNames"]
    assert {"name", "identity", "type", "port", "host"} <= set(names)
    assert body["results"] and all(len(row) == len(names) for row in body["results"])


@pytest.mark.c_router_bug("a QUERY without entityType leaves out the entities the C core keeps (connection, "
                          "router.link, router.address, ...): only its Python agent's are listed")
def test_query_without_entity_type_returns_entities_of_all_types(mgmt: MgmtClient) -> None:
    body = mgmt.ok("QUERY", body={"attributeNames": ["type", "name", "identity"]})
    types = {row[0] for row in body["results"]}
    assert {LISTENER, LOG, ROUTER, ADDRESS, "org.apache.qpid.dispatch.connection"} <= types
    assert all(len(row) == 3 for row in body["results"])


@pytest.mark.c_router_bug("qdrouterd's Python agent ignores count and offset for the entities it keeps (log,"
                          " listener, ...): every row, each time")
def test_query_count_and_offset_paginate(mgmt: MgmtClient) -> None:
    names = {"attributeNames": ["identity"]}
    every = mgmt.ok("QUERY", props={"entityType": "log"}, body=names)["results"]
    assert len(every) >= 5
    first = mgmt.ok("QUERY", props={"entityType": "log", "count": 2}, body=names)["results"]
    second = mgmt.ok("QUERY", props={"entityType": "log", "count": 2, "offset": 2}, body=names)["results"]
    rest = mgmt.ok("QUERY", props={"entityType": "log", "offset": 4}, body=names)["results"]
    assert first == every[:2]
    assert second == every[2:4]
    assert rest == every[4:]
    assert mgmt.ok("QUERY", props={"entityType": "log", "offset": len(every)}, body=names)["results"] == []
    # qdrouterd answers count 0 with every row (its agent stops only when count rows are sent).
    assert mgmt.ok("QUERY", props={"entityType": "log", "count": 0}, body=names)["results"] == every


@pytest.mark.parametrize("entity_type", ["router.address", "router.link", "connection"])
def test_pages_of_live_entities_make_up_the_whole_listing(mgmt: MgmtClient, router: Router, net: Net,
                                                          entity_type: str) -> None:
    """Addresses, links and connections make only the rows a page asks for: pages of 3, in
    order, are the full listing (the $management addresses folded into one row included),
    and router's addrCount and linkCount count the rows."""
    clients = [net.connect(router.url) for _ in range(3)]
    for n, client in enumerate(clients):
        for k in range(4):
            client.receiver(f"paging/{n}.{k}")
        client.sender(f"paging/{n}.0")
    names = {"attributeNames": ["identity", "name"]}
    every = mgmt.ok("QUERY", props={"entityType": entity_type}, body=names)["results"]
    assert len(every) >= 4  # 4 connections, 15 links, 12 addresses and the agent's
    pages = []
    for offset in range(0, len(every) + 3, 3):
        pages += mgmt.ok("QUERY", props={"entityType": entity_type, "count": 3, "offset": offset},
                         body=names)["results"]
    assert pages == every
    assert len({row[0] for row in every}) == len(every), "identities are unique"
    address_count, link_count = mgmt.ok("QUERY", props={"entityType": "router"},
                                        body={"attributeNames": ["addrCount", "linkCount"]})["results"][0]
    if entity_type == "router.address":
        assert address_count == len(every)
    elif entity_type == "router.link":
        assert link_count == len(every)


@pytest.mark.differs_from_c("qdrouterd refuses a QUERY naming an unknown attribute with 404 for the entities"
                            " its Python agent keeps; qdmesh answers a column of None, as qdrouterd's core "
                            "does for its own")
def test_query_unknown_attribute_name_gives_none_column(mgmt: MgmtClient) -> None:
    # qdrouterd answers unknown attribute names in a QUERY with null values.
    body = mgmt.ok("QUERY", props={"entityType": "log"}, body={"attributeNames": ["name", "noSuchAttr"]})
    assert body["results"] and all(row[1] is None for row in body["results"])
