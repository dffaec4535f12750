"""qdstat -g's Deliveries from / to Route Container against a real RabbitMQ broker: messages
through a queue waypoint (auto-links) and through link routes to a broker queue are counted
in the router entity and in the addresses they passed (router.address), and stay counted when
the links are gone."""

from __future__ import annotations

from typing import Dict, Tuple

from tests.linkroute.lrutil import both_ways, wait_active
from tests.management.mgmt import MgmtClient
from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle

from .rabbit import RabbitBroker
from .waypoint import queue_links, wait_statuses, waypoint_router

ADDR = "queue.rc"


def _totals(mgmt: MgmtClient) -> Dict[str, int]:
    row = mgmt.query("router", ["deliveriesIngressRouteContainer", "deliveriesEgressRouteContainer"])[0]
    return {"from": row["deliveriesIngressRouteContainer"], "to": row["deliveriesEgressRouteContainer"]}


def _by_address(mgmt: MgmtClient) -> Dict[str, Tuple[int, int]]:
    rows = mgmt.query("router.address", ["key", "deliveriesIngressRouteContainer",
                                         "deliveriesEgressRouteContainer"])
    return {str(r["key"]): (r["deliveriesIngressRouteContainer"], r["deliveriesEgressRouteContainer"])
            for r in rows if r["deliveriesIngressRouteContainer"] or r["deliveriesEgressRouteContainer"]}


def test_route_container_totals(broker: RabbitBroker, router_factory, net: Net,  # type: ignore[no-untyped-def]
                                queue_name: str) -> None:
    links = (queue_links(ADDR, f"/queue/{queue_name}", "broker")
             + both_ways("b2", connection="broker", delete="b2.", add="/queue/"))
    router = waypoint_router(router_factory, {"broker": broker}, links)
    wait_statuses(router, [(ADDR, "in", "broker"), (ADDR, "out", "broker")], ["active"])
    wait_active(router, 2)
    mgmt = MgmtClient(net, net.connect(router.url))
    assert _totals(mgmt) == {"from": 0, "to": 0}

    # Auto-links: 3 messages into the broker queue, then 3 back out of it.
    client = net.connect(router.url)
    outcomes = send_and_settle(net, client.sender(ADDR), [msg(f"w{i}") for i in range(3)], timeout=20)
    assert [o.state for o in outcomes] == [ACCEPTED] * 3, [o.name for o in outcomes]
    assert broker.queue_depth(queue_name) == 3
    rcv = client.receiver(ADDR)
    net.wait(lambda: len(rcv.received) == 3, 20, "the 3 queued messages")
    # Link routes: 4 messages to another queue of the broker and 4 back.
    routed = f"b2.{queue_name}-lr"
    outcomes = send_and_settle(net, client.sender(routed), [msg(f"r{i}") for i in range(4)], timeout=20)
    assert [o.state for o in outcomes] == [ACCEPTED] * 4, [o.name for o in outcomes]
    routed_rcv = client.receiver(routed)
    net.wait(lambda: len(routed_rcv.received) == 4, 20, "the 4 routed messages")
    assert routed_rcv.bodies() == [f"r{i}" for i in range(4)]
    net.pump(0.5)

    expected = {"from": 3 + 4, "to": 3 + 4}
    assert _totals(mgmt) == expected
    # Per address: the waypoint's way to the queue (phase 0) and back (phase 1), and the
    # link route's link-in / link-out rows.
    per_address = {f"M0{ADDR}": (0, 3), f"M1{ADDR}": (3, 0), "Cb2": (0, 4), "Db2": (4, 0)}
    assert _by_address(mgmt) == per_address
    # The routed links detach with the client: their deliveries stay counted (in the link
    # route's rows too; the auto-links keep the waypoint's addresses).
    client.close()
    net.pump(0.5)
    assert not [r for r in mgmt.query("router.link", ["identity"]) if str(r["identity"]).startswith("r")]
    assert _totals(mgmt) == expected
    assert _by_address(mgmt) == per_address
    # The auto-links are deleted (the router detaches them): still counted.
    for row in mgmt.query("router.config.autoLink", ["name"]):
        mgmt.delete("router.config.autoLink", row["name"])
    net.pump(0.5)
    assert mgmt.query("router.config.autoLink", ["name"]) == []
    assert _totals(mgmt) == expected
