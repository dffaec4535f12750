"""QUERY of each entity type, checked against what the test itself did to the router."""

from __future__ import annotations

from tests.management.mgmt import (
    ADDRESS,
    CONNECTION,
    LINK,
    LISTENER,
    MANAGEMENT,
    NODE,
    ROUTER,
    ROUTER_ADDRESS,
    MgmtClient,
)
from tests.router.amqpclient import Net, msg, send_and_settle
from tests.router.routerproc import Router


def test_query_router(mgmt: MgmtClient, router: Router, net: Net) -> None:
    rows = mgmt.query("router", ["id", "mode", "addrCount", "linkCount", "connectionCount", "type"])
    assert len(rows) == 1
    row = rows[0]
    assert row["id"] == "R1"
    assert row["mode"] == "standalone"
    assert row["type"] == ROUTER
    # The management client itself: one connection, a dynamic receiver and a sender.
    assert row["connectionCount"] == 1
    assert row["linkCount"] == 2
    assert isinstance(row["addrCount"], int) and row["addrCount"] >= 2
    c = net.connect(router.url)
    c.receiver("closest.q1")
    c.sender("closest.q2")
    row2 = mgmt.query("router", ["addrCount", "linkCount", "connectionCount"])[0]
    assert row2["connectionCount"] == 2
    assert row2["linkCount"] == 4
    assert row2["addrCount"] == row["addrCount"] + 2


def test_query_connection_shows_own_connection(mgmt: MgmtClient) -> None:
    container = mgmt.client.conn.container
    rows = mgmt.query(CONNECTION, ["identity", "container", "role", "dir", "opened", "host", "type"])
    mine = [r for r in rows if r["container"] == container]
    assert len(mine) == 1, rows
    assert mine[0]["role"] == "normal"
    assert mine[0]["dir"] == "in"
    assert mine[0]["opened"] is True
    assert mine[0]["type"] == CONNECTION
    assert mine[0]["host"].startswith("127.0.0.1:")


def test_query_connection_sees_a_new_connection_and_its_going(mgmt: MgmtClient, router: Router) -> None:
    # A second event loop: its connection has a container id of its own.
    other_net = Net()
    try:
        other = other_net.connect(router.url)
        container = other.conn.container
        assert container != mgmt.client.conn.container
        containers = [r["container"] for r in mgmt.query("connection", ["container"])]
        assert containers.count(container) == 1
    finally:
        other_net.close()
    mgmt.net.pump(0.1)
    containers = [r["container"] for r in mgmt.query("connection", ["container"])]
    assert container not in containers
    assert containers == [mgmt.client.conn.container]


def test_query_router_link_receiver_and_delivery_count(mgmt: MgmtClient, router: Router, net: Net) -> None:
    c = net.connect(router.url)
    rcv = c.receiver("closest.watched")
    names = ["linkName", "linkDir", "owningAddr", "deliveryCount", "type"]

    def my_row() -> dict:
        rows = [r for r in mgmt.query("router.link", names) if r["linkName"] == rcv.link.name]
        assert len(rows) == 1, rows
        return rows[0]

    row = my_row()
    assert row["linkDir"] == "out"
    assert row["owningAddr"].endswith("closest.watched")
    assert row["type"] == LINK
    before = row["deliveryCount"]
    snd = c.sender("closest.watched")
    send_and_settle(net, snd, [msg(i) for i in range(3)])
    net.wait(lambda: len(rcv.received) == 3, 5, "3 messages")
    assert my_row()["deliveryCount"] == before + 3
    senders = [r for r in mgmt.query("router.link", names) if r["linkName"] == snd.link.name]
    assert len(senders) == 1 and senders[0]["linkDir"] == "in"
    assert senders[0]["owningAddr"].endswith("closest.watched")


def test_link_owning_address_is_the_address_key(mgmt: MgmtClient) -> None:
    # The management client's dynamic reply-to receiver: qdstat -l shows the same class and
    # address for it as qdstat -a (local temp.xxx), not the topological form.
    mine = [r for r in mgmt.query("router.link", ["linkName", "owningAddr"])
            if r["linkName"] == mgmt.receiver.link.name]
    assert len(mine) == 1, mine
    addresses = {r["key"]: r for r in mgmt.query("router.address", ["key", "distribution"])}
    assert mine[0]["owningAddr"].startswith("L"), mine
    assert mine[0]["owningAddr"] in addresses, (mine, addresses)
    # A temporary address is anycast balanced, as qdrouterd makes it, whatever the prefixes say.
    assert addresses[mine[0]["owningAddr"]]["distribution"] == "balanced"


def test_query_router_address(mgmt: MgmtClient, router: Router, net: Net) -> None:
    c = net.connect(router.url)
    c.receiver("multicast.radio")
    c.receiver("multicast.radio")
    c.receiver("balanced.work")
    names = ["name", "key", "distribution", "subscriberCount", "type", "inProcess"]
    rows = {r["name"]: r for r in mgmt.query("router.address", names)}
    radio = [r for n, r in rows.items() if n.endswith("multicast.radio")]
    work = [r for n, r in rows.items() if n.endswith("balanced.work")]
    assert len(radio) == 1 and len(work) == 1, rows
    assert radio[0]["distribution"] == "multicast"
    assert radio[0]["subscriberCount"] == 2
    assert work[0]["distribution"] == "balanced"
    assert work[0]["subscriberCount"] == 1
    assert radio[0]["type"] == ROUTER_ADDRESS
    mgmt_rows = [r for n, r in rows.items() if n.endswith("$management")]
    assert mgmt_rows and all(r["inProcess"] == 1 for r in mgmt_rows)


def test_query_listener(mgmt: MgmtClient, router: Router) -> None:
    rows = mgmt.query("listener", ["name", "identity", "host", "port", "type"])
    assert len(rows) == 1
    assert rows[0]["port"] == str(router.port)
    assert rows[0]["host"] == "127.0.0.1"
    assert rows[0]["type"] == LISTENER
    assert rows[0]["identity"]


def test_query_config_address(mgmt: MgmtClient) -> None:
    rows = mgmt.query("router.config.address", ["prefix", "distribution", "type"])
    assert {(r["prefix"], r["distribution"]) for r in rows} == {
        ("multicast", "multicast"), ("closest", "closest"), ("balanced", "balanced")}
    assert all(r["type"] == ADDRESS for r in rows)
    assert len(mgmt.query("address", ["prefix"])) == 3


def test_query_log(mgmt: MgmtClient) -> None:
    rows = mgmt.query("log", ["module", "enable", "identity"])
    modules = {r["module"] for r in rows}
    assert {"DEFAULT", "ROUTER", "AGENT", "SERVER"} <= modules
    default = [r for r in rows if r["module"] == "DEFAULT"]
    assert default[0]["enable"] == "info+"
    assert default[0]["identity"] == "log/DEFAULT"


def test_query_router_node_is_empty_when_standalone(mgmt: MgmtClient) -> None:
    body = mgmt.ok("QUERY", props={"entityType": NODE}, body={"attributeNames": ["id", "nextHop"]})
    assert body == {"attributeNames": ["id", "nextHop"], "results": []}


def test_query_management(mgmt: MgmtClient) -> None:
    rows = mgmt.query("management", ["name", "identity", "type"])
    assert len(rows) == 1
    assert rows[0]["type"] == MANAGEMENT
