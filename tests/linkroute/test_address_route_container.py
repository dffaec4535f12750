"""Per-address Deliveries from / to Route Container (router.address's
deliveriesIngressRouteContainer / deliveriesEgressRouteContainer) and the router totals in
/metrics: each address counts the deliveries of route-container links bound to it (auto-links
in the waypoint's phase 0 and 1 rows, link-routed links in their route's link-in / link-out
row), and keeps counting them when those links are gone. The route container is a second
qdmesh router (C), reached by R1's route-container connector."""

from __future__ import annotations

from typing import Dict, List, Tuple

import pytest

from tests.management.mgmt import MgmtClient
from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle
from tests.router.routerproc import Router
from tests.router_http.scrape import scrape, value

from .conftest import EdgeFactory
from .lrutil import both_ways, wait_for

_NAMES = ["key", "deliveriesIngressRouteContainer", "deliveriesEgressRouteContainer"]
# As in test_route_container_totals: R1's out auto-link takes al.x (phase 0) to C, its in
# auto-link brings it back from C as phase 1 to R1's consumers.
_AUTO_LINKS = ("address {\n    prefix: al\n    waypoint: yes\n}\n"
               "autoLink {\n    address: al.x\n    direction: out\n    connection: cont\n}\n"
               "autoLink {\n    address: al.x\n    direction: in\n    connection: cont\n}\n")


def _by_address(mgmt: MgmtClient) -> Dict[str, Tuple[int, int]]:
    """key -> (from route container, to route container), for rows where either moved."""
    rows = mgmt.query("router.address", _NAMES)
    return {str(r["key"]): (r["deliveriesIngressRouteContainer"], r["deliveriesEgressRouteContainer"])
            for r in rows if r["deliveriesIngressRouteContainer"] or r["deliveriesEgressRouteContainer"]}


def _router_totals(mgmt: MgmtClient) -> Tuple[int, int]:
    row = mgmt.query("router", _NAMES[1:])[0]
    return row["deliveriesIngressRouteContainer"], row["deliveriesEgressRouteContainer"]


def _metrics(router: Router) -> Tuple[float, float]:
    samples = scrape(router.ports["http"])
    return (value(samples, "qdmesh_route_container_deliveries_total", direction="ingress"),
            value(samples, "qdmesh_route_container_deliveries_total", direction="egress"))


def _auto_links(mgmt: MgmtClient) -> List[str]:
    return [r["operStatus"] for r in mgmt.query("router.config.autoLink", ["operStatus"])]


@pytest.mark.qdmesh_only("counts read from qdmesh's Prometheus metrics on an http listener (the C router "
                         "here is built without HTTP)")
def test_addresses_count_their_route_container_deliveries(edge_factory: EdgeFactory, container: Router,
                                                          net: Net) -> None:
    r1 = edge_factory(both_ways("lr", connection="cont") + _AUTO_LINKS, {"cont": container.port}, active=2,
                      extra_listeners={"http": {"http": "true"}})
    mgmt = MgmtClient(net, net.connect(r1.url))
    wait_for(lambda: (_auto_links(mgmt) == ["active", "active"], _auto_links(mgmt)), 20,
             "both auto-links active", net=net)
    assert _by_address(mgmt) == {}
    assert _metrics(r1) == (0, 0)

    # Link route 'in': 4 messages from a client on R1 to a consumer on C.
    at_c = net.connect(container.url)
    c_consumer = at_c.receiver("lr.in")
    client = net.connect(r1.url)
    routed_snd = client.sender("lr.in")
    outcomes = send_and_settle(net, routed_snd, [msg(f"in{i}") for i in range(4)], timeout=10)
    assert [o.state for o in outcomes] == [ACCEPTED] * 4, [o.name for o in outcomes]
    net.wait(lambda: len(c_consumer.received) == 4, 10, "4 messages at C's consumer")
    # Link route 'out': 3 messages from a producer on C to a client receiving on R1.
    routed_rcv = client.receiver("lr.out")
    assert routed_rcv.remote_opened and not routed_rcv.remote_closed, routed_rcv.remote_condition
    send_and_settle(net, at_c.sender("lr.out"), [msg(f"out{i}") for i in range(3)], timeout=10)
    net.wait(lambda: len(routed_rcv.received) == 3, 10, "3 routed messages at R1's client")
    # Auto-links: 5 messages out to C and back in. This client's sender and receiver stay,
    # so the waypoint's addresses stay in the table after the auto-links have gone.
    waypoint_rcv = client.receiver("al.x")
    waypoint_snd = client.sender("al.x")
    outcomes = send_and_settle(net, waypoint_snd, [msg(f"al{i}") for i in range(5)], timeout=10)
    assert [o.state for o in outcomes] == [ACCEPTED] * 5, [o.name for o in outcomes]
    net.wait(lambda: len(waypoint_rcv.received) == 5, 10, "5 messages back through the auto-links")
    # Plain message routing between two clients of R1: no route container, nothing counted.
    plain_rcv = client.receiver("plain")
    send_and_settle(net, client.sender("plain"), [msg("p")], timeout=10)
    net.wait(lambda: len(plain_rcv.received) == 1, 10, "the plain message")

    expected = {
        "M0al.x": (0, 5),  # to C on the out auto-link
        "M1al.x": (5, 0),  # back from C on the in auto-link
        "Clr": (0, 4),     # link route 'in': the routed link toward C
        "Dlr": (3, 0),     # link route 'out': the routed link from C
    }
    wait_for(lambda: (_by_address(mgmt) == expected, _by_address(mgmt)), 10, f"per address {expected}",
             net=net)
    # The addresses add up to the router's totals, and /metrics shows those.
    assert _router_totals(mgmt) == (3 + 5, 4 + 5)
    assert _metrics(r1) == (3 + 5, 4 + 5)

    # The client detaches the routed links: their link routes' rows keep the count.
    routed_snd.close()
    routed_rcv.close()
    net.wait(lambda: not [r for r in mgmt.query("router.link", ["identity"])
                          if str(r["identity"]).startswith("r")], 10, "routed links gone")
    assert _by_address(mgmt) == expected
    # The container goes, and the auto-links with its connection: the waypoint's addresses
    # (still used by this client) keep the count.
    assert container.terminate() == 0
    wait_for(lambda: ("active" not in _auto_links(mgmt), _auto_links(mgmt)), 20,
             "auto-links down with the container", net=net)
    assert _by_address(mgmt) == expected
    assert _router_totals(mgmt) == (3 + 5, 4 + 5)
    assert _metrics(r1) == (3 + 5, 4 + 5)
