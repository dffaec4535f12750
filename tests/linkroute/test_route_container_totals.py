"""qdstat -g's Deliveries from / to Route Container (the router entity's
deliveriesIngressRouteContainer / deliveriesEgressRouteContainer): deliveries received from and
sent to route-container connections, on link-routed links and auto-links alike, and they stay
counted when those links and the connection are gone. The route container is a second qdmesh
router (C), reached by R1's route-container connector."""

from __future__ import annotations

from typing import Dict, List

import pytest

from tests.management.mgmt import MgmtClient
from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle
from tests.router.routerproc import Router

from .conftest import EdgeFactory
from .lrutil import both_ways, tool_out, wait_for

_NAMES = ["deliveriesIngressRouteContainer", "deliveriesEgressRouteContainer"]
# A waypoint through the container: R1's out auto-link sends al.x (phase 0) to C, where R1's in
# auto-link consumes it, bringing it back as phase 1 to R1's consumers.
_AUTO_LINKS = ("address {\n    prefix: al\n    waypoint: yes\n}\n"
               "autoLink {\n    address: al.x\n    direction: out\n    connection: cont\n}\n"
               "autoLink {\n    address: al.x\n    direction: in\n    connection: cont\n}\n")


def _totals(mgmt: MgmtClient) -> Dict[str, int]:
    row = mgmt.query("router", _NAMES)[0]
    return {"from": row["deliveriesIngressRouteContainer"], "to": row["deliveriesEgressRouteContainer"]}


def _auto_links(mgmt: MgmtClient) -> List[str]:
    return [r["operStatus"] for r in mgmt.query("router.config.autoLink", ["operStatus"])]


@pytest.mark.differs_from_c("qdrouterd's deliveriesIngressRouteContainer/deliveriesEgressRouteContainer "
                            "count fewer of the deliveries on link-routed links and auto-links (5/5 where "
                            "qdmesh counts 8/9)")
def test_route_container_totals(edge_factory: EdgeFactory, container: Router, net: Net) -> None:
    r1 = edge_factory(both_ways("lr", connection="cont") + _AUTO_LINKS, {"cont": container.port}, active=2)
    mgmt = MgmtClient(net, net.connect(r1.url))
    wait_for(lambda: (_auto_links(mgmt) == ["active", "active"], _auto_links(mgmt)), 20,
             "both auto-links active", net=net)
    assert _totals(mgmt) == {"from": 0, "to": 0}

    # Link route 'in': 4 messages from a client on R1 to a consumer on C.
    at_c = net.connect(container.url)
    c_consumer = at_c.receiver("lr.in")
    client = net.connect(r1.url)
    outcomes = send_and_settle(net, client.sender("lr.in"), [msg(f"in{i}") for i in range(4)], timeout=10)
    assert [o.state for o in outcomes] == [ACCEPTED] * 4, [o.name for o in outcomes]
    net.wait(lambda: len(c_consumer.received) == 4, 10, "4 messages at C's consumer")
    # Link route 'out': 3 messages from a producer on C to a client receiving on R1.
    routed_rcv = client.receiver("lr.out")
    assert routed_rcv.remote_opened and not routed_rcv.remote_closed, routed_rcv.remote_condition
    c_producer = at_c.sender("lr.out")
    send_and_settle(net, c_producer, [msg(f"out{i}") for i in range(3)], timeout=10)
    net.wait(lambda: len(routed_rcv.received) == 3, 10, "3 routed messages at R1's client")
    # Auto-links: 5 messages out to C and back in.
    waypoint_rcv = client.receiver("al.x")
    outcomes = send_and_settle(net, client.sender("al.x"), [msg(f"al{i}") for i in range(5)], timeout=10)
    assert [o.state for o in outcomes] == [ACCEPTED] * 5, [o.name for o in outcomes]
    net.wait(lambda: len(waypoint_rcv.received) == 5, 10, "5 messages back through the auto-links")
    assert sorted(waypoint_rcv.bodies()) == [f"al{i}" for i in range(5)]

    expected = {"from": 3 + 5, "to": 4 + 5}
    wait_for(lambda: (_totals(mgmt) == expected, _totals(mgmt)), 10, f"totals {expected}", net=net)
    text = tool_out("qdstat", r1, "-g")
    shown = {line.rsplit(None, 1)[0].strip(): line.split()[-1] for line in text.splitlines()
             if "Route Container" in line}
    assert shown == {"Deliveries from Route Container": "8", "Deliveries to Route Container": "9"}, text
    # C has no route-container connection (R1 came in on its normal listener): nothing counted.
    assert _totals(MgmtClient(net, net.connect(container.url))) == {"from": 0, "to": 0}

    # The routed links detach: their deliveries stay counted.
    client.close()
    at_c.close()
    net.pump(0.3)
    assert not [r for r in mgmt.query("router.link", ["identity"]) if str(r["identity"]).startswith("r")]
    assert _totals(mgmt) == expected
    # The container goes, and the auto-links with its connection: still counted.
    assert container.terminate() == 0
    wait_for(lambda: ("active" not in _auto_links(mgmt), _auto_links(mgmt)), 20,
             "auto-links down with the container", net=net)
    assert _totals(mgmt) == expected
