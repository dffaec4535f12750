"""Every qdstat view's headings and cells, built from given entity maps (no router)."""

from __future__ import annotations

import pytest

from qdrouter.schema import entity_type
from qdrouter.tools import qdstat_views as v
from qdrouter.tools.table import format_text


@pytest.mark.parametrize(("key", "parts"), [
    ("M0my-address", ("mobile", "my-address", "0")),
    ("M1queue.first", ("mobile", "queue.first", "1")),
    ("L$management", ("local", "$management", "")),
    ("Rrouter.b", ("router", "router.b", "")),
    ("T0/R1/$management", ("topo", "0/R1/$management", "")),
    ("Cbroker.", ("link-in", "broker.", "")),
    ("Dbroker.", ("link-out", "broker.", "")),
    ("Ebroker.#", ("link-in", "broker.#", "")),
    ("Fbroker.*.x", ("link-out", "broker.*.x", "")),
    ("Aarea", ("area", "area", "")),
    ("my-address", ("mobile", "my-address", "")),  # a plain address: mobile
    ("Mqueue", ("mobile", "Mqueue", "")),  # M without a phase digit is not a class prefix
    ("", ("", "", "")),
    (None, ("", "", "")),
])
def test_address_parts(key: str | None, parts: tuple) -> None:
    assert v.address_parts(key) == parts


def test_address_parts_not_decoded_when_caller_knows_keys_are_plain() -> None:
    assert v.address_parts("Local.queue", encoded=False) == ("mobile", "Local.queue", "")


def _addr(name: str, **attrs: object) -> dict:
    return {"name": name, "identity": name, "distribution": "closest", "inProcess": False,
            "subscriberCount": 0, "remoteCount": 0, "containerCount": 0, "deliveriesIngress": 0,
            "deliveriesEgress": 0, "deliveriesTransit": 0, "deliveriesToContainer": 0,
            "deliveriesFromContainer": 0, **attrs}


def test_addresses_view() -> None:
    t = v.addresses([
        _addr("M0my-address", subscriberCount=1, deliveriesIngress=3, deliveriesEgress=2),
        _addr("L$management", inProcess=True),
        _addr("M0$management", inProcess=1, deliveriesToContainer=4),
    ])
    assert t.title == "Router Addresses"
    assert t.heads == ["class", "addr", "phs", "distrib", "in-proc", "local", "remote", "cntnr", "in",
                       "out", "thru", "to-proc", "from-proc"]
    # Sorted by address text; a boolean inProcess shows as a count.
    assert t.rows == [
        ["local", "$management", "", "closest", 1, 0, 0, 0, 0, 0, 0, 0, 0],
        ["mobile", "$management", "0", "closest", 1, 0, 0, 0, 0, 0, 0, 4, 0],
        ["mobile", "my-address", "0", "closest", 0, 1, 0, 0, 3, 2, 0, 0, 0],
    ]


def test_addresses_view_plain_keys_are_all_mobile() -> None:
    t = v.addresses([_addr("$management"), _addr("Local.queue")])
    assert [row[:3] for row in t.rows] == [["mobile", "$management", ""], ["mobile", "Local.queue", ""]]


def test_addresses_prefer_key_attribute() -> None:
    t = v.addresses([_addr("whatever", key="M2x")])
    assert t.rows[0][:3] == ["mobile", "x", "2"]


def test_general_view() -> None:
    t = v.general([{"id": "R1", "mode": "interior", "version": "0.1.0", "addrCount": 4, "linkCount": 2,
                    "nodeCount": 0, "connectionCount": 1, "linkRouteCount": 0, "autoLinkCount": 0,
                    "acceptedDeliveries": 7}])
    assert t.title == "Router Statistics"
    assert t.heads == ["attr", "value"]
    rows = dict((label, value) for label, value in t.rows)
    assert rows["Router Id"] == "R1"
    assert rows["Mode"] == "interior"
    assert rows["Addresses"] == 4
    assert rows["Accepted Count"] == 7
    # Counters the agent does not report are left out rather than shown empty.
    assert "Rejected Count" not in rows
    assert [label for label, _ in t.rows][:4] == ["Version", "Mode", "Router Id", "Link Routes"]


def test_general_view_without_router_entity_shows_empty_values() -> None:
    assert all(value is None for _, value in v.general([]).rows)


def test_connections_view() -> None:
    t = v.connections([
        {"identity": "3", "host": "127.0.0.1:4242", "container": "c1", "role": "normal", "dir": "in",
         "isEncrypted": False, "isAuthenticated": True, "sasl": "ANONYMOUS"},
        {"identity": "4", "host": "h:1", "container": "c2", "role": "inter-router", "dir": "out",
         "isEncrypted": True, "sslProto": "TLSv1.3", "sslCipher": "AES", "isAuthenticated": True,
         "sasl": "PLAIN", "user": "bob"},
        {"identity": "5", "isAuthenticated": True, "sasl": "EXTERNAL"},
        {"identity": "6", "isAuthenticated": False},
    ])
    assert t.title == "Connections"
    assert t.heads == ["id", "host", "container", "role", "dir", "security", "authentication"]
    assert t.rows[0] == ["3", "127.0.0.1:4242", "c1", "normal", "in", "no-security", "anonymous-user"]
    assert t.rows[1][5:] == ["TLSv1.3(AES)", "PLAIN(bob)"]
    assert t.rows[2][6] == "x.509"
    assert t.rows[3][6] == "no-auth"


def test_connections_view_shows_blocked_connections_when_the_agent_tells() -> None:
    t = v.connections([
        {"identity": "3", "outputBlocked": True, "inputHeld": False},
        {"identity": "4", "outputBlocked": False, "inputHeld": True},
        {"identity": "5", "outputBlocked": True, "inputHeld": True},
        {"identity": "6", "outputBlocked": False, "inputHeld": False},
    ])
    assert t.heads == ["id", "host", "container", "role", "dir", "security", "authentication", "blocked"]
    assert [row[-1] for row in t.rows] == ["output", "input", "output,input", "-"]


def test_links_view() -> None:
    t = v.links([{"linkType": "endpoint", "linkDir": "out", "connectionId": 3, "identity": "7",
                  "peer": None, "owningAddr": "M0my-address", "capacity": 250, "undeliveredCount": 1,
                  "unsettledCount": 2, "deliveryCount": 9, "adminStatus": "enabled", "operStatus": "up"}])
    assert t.title == "Router Links"
    assert t.heads == ["type", "dir", "conn id", "id", "peer", "class", "addr", "phs", "cap", "undel",
                       "unsettled", "deliveries", "admin", "oper"]
    assert t.rows == [["endpoint", "out", 3, "7", None, "mobile", "my-address", "0", 250, 1, 2, 9,
                       "enabled", "up"]]


def test_nodes_view() -> None:
    t = v.nodes([{"id": "R2", "nextHop": None, "routerLink": 4, "cost": 1, "linkState": ["R1", "R3"]},
                 {"routerId": "R3", "nextHop": "R2", "linkState": []}])
    assert t.title == "Routers in the Network"
    assert t.heads == ["router-id", "next-hop", "link", "cost", "neighbors"]
    assert t.rows == [["R2", "-", 4, 1, ["R1", "R3"]], ["R3", "R2", "-", "-", "-"]]
    assert "R1,R3" in format_text(t)


def test_nodes_view_lists_the_router_queried_as_self() -> None:
    others = [{"id": "R3", "nextHop": "R2", "cost": 2, "linkState": ["R2"]},
              {"id": "R2", "nextHop": None, "routerLink": 4, "cost": 1, "linkState": ["R1", "R3"]}]
    entities = v.with_self_node({"id": "R1", "mode": "interior"}, others)
    t = v.nodes(entities)
    assert t.rows == [["R1", "(self)", "-", "-", ["R2"]], ["R2", "-", 4, 1, ["R1", "R3"]],
                      ["R3", "R2", "-", 2, ["R2"]]]
    # A standalone or edge router has no router list, and an agent that lists the router
    # itself (qdrouterd's) does not get it twice.
    assert v.with_self_node({"id": "R1", "mode": "standalone"}, []) == []
    assert v.with_self_node({"id": "R1", "mode": "edge"}, others) == others
    listed = [*others, {"id": "R1", "nextHop": "(self)"}]
    assert v.with_self_node({"id": "R1", "mode": "interior"}, listed) == listed
    assert v.with_self_node(None, others) == others


def test_connectors_view() -> None:
    message = "cannot connect to b.example:55672: Connection refused; retrying in 8 s"
    t = v.connectors([{"name": "to-b", "host": "b.example", "port": "55672", "role": "inter-router",
                       "cost": 2, "connectionStatus": "Waiting", "connectionMsg": message}])
    assert t.title == "Connectors"
    assert t.heads == ["name", "host", "role", "cost", "status", "message"]
    assert t.rows == [["to-b", "b.example:55672", "inter-router", 2, "Waiting", message]]


def test_autolinks_view_accepts_old_and_new_attribute_names() -> None:
    t = v.autolinks([
        {"address": "queue.first", "direction": "in", "phase": 1, "linkRef": 6, "operStatus": "active"},
        {"addr": "queue.second", "dir": "out", "phase": 0, "operStatus": "failed",
         "lastError": "Node not found"},
    ])
    assert t.title == "AutoLinks"
    assert t.heads == ["addr", "dir", "phase", "link", "status", "lastErr"]
    assert t.rows == [["queue.first", "in", 1, 6, "active", None],
                      ["queue.second", "out", 0, None, "failed", "Node not found"]]


def test_linkroutes_view() -> None:
    t = v.linkroutes([{"prefix": "broker.", "direction": "in", "distribution": "linkBalanced",
                       "operStatus": "active"}, {"pattern": "b.#", "dir": "out"}])
    assert t.title == "Link Routes"
    assert t.heads == ["prefix", "dir", "distrib", "status"]
    assert t.rows == [["broker.", "in", "linkBalanced", "active"], ["b.#", "out", None, None]]


VHOST = {"hostname": "example.com", "maxConnections": 10, "maxMessageSize": None,
         "maxConnectionsPerUser": 5, "maxConnectionsPerHost": 6, "allowUnknownUser": True,
         "groups": {"b": {"users": "bob", "maxSessions": 3}, "a": {"users": "alice"}}}


def test_vhosts_view() -> None:
    t = v.vhosts([VHOST])
    assert t.title == "Vhosts"
    assert t.heads == ["hostname", "maxConnections", "maxMessageSize", "maxConnectionsPerUser",
                       "maxConnectionsPerHost", "allowUnknownUser", "groups"]
    assert t.rows == [["example.com", 10, None, 5, 6, True, 2]]


def test_vhostgroups_view_columns_come_from_the_schema() -> None:
    t = v.vhostgroups([VHOST])
    settings = [a for a in entity_type("vhostUserGroupSettings").attributes
                if a not in ("name", "identity", "type")]
    assert t.title == "Vhost Groups"
    assert t.heads == ["vhost", "group", *settings]
    assert [row[:3] for row in t.rows] == [["example.com", "a", "alice"], ["example.com", "b", "bob"]]
    assert t.rows[1][t.heads.index("maxSessions")] == 3


def test_memory_view() -> None:
    t = v.memory([{"typeName": "qd_message_t", "typeSize": 128, "transferBatchSize": 64,
                   "localFreeListMax": 128, "totalAllocFromHeap": 256, "heldByThreads": 100,
                   "batchesRebalancedToThreads": 2, "batchesRebalancedToGlobal": 1}])
    assert t.title == "Types"
    assert t.heads == ["type", "size", "batch", "thread-max", "total", "in-threads", "rebal-in", "rebal-out"]
    assert t.rows == [["qd_message_t", 128, 64, 128, 256, 100, 2, 1]]


def test_every_view_names_a_schema_entity_type() -> None:
    for view in v.VIEWS.values():
        entity_type(view.entity_type)  # raises if the schema does not know it
