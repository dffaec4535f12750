"""The router entity's totals (qdstat -g, the /metrics counters): they count what happened,
whatever became of the addresses and links since, and the configured entities."""

from __future__ import annotations

from typing import Dict

from tests.management.mgmt import MgmtClient
from tests.router.amqpclient import Net, msg, send_and_settle
from tests.router.routerproc import Router, RouterFactory

_TOTALS = ["deliveriesIngress", "deliveriesEgress", "deliveriesTransit", "acceptedDeliveries"]


def _totals(mgmt: MgmtClient) -> Dict[str, int]:
    return mgmt.query("router", _TOTALS)[0]


def test_totals_keep_the_deliveries_of_addresses_gone(mgmt: MgmtClient, router: Router, net: Net) -> None:
    c = net.connect(router.url)
    rcv = c.receiver("closest.passing")
    snd = c.sender("closest.passing")
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(3)])
    assert [o.name for o in outcomes] == ["accepted"] * 3
    net.wait(lambda: len(rcv.received) == 3, 5, "3 messages")
    while_attached = _totals(mgmt)
    # The address goes with its last link (as in qdrouterd): qdstat -a forgets it ...
    snd.close()
    rcv.close()
    net.pump(0.2)
    keys = [r["key"] for r in mgmt.query("router.address", ["key"])]
    assert not [k for k in keys if k.endswith("closest.passing")], keys
    # ... but the router's totals, counters for Prometheus, must not go down.
    after = _totals(mgmt)
    for name in _TOTALS:
        assert after[name] >= while_attached[name], (name, while_attached, after)
    assert after["deliveriesIngress"] >= 3 and after["deliveriesEgress"] >= 3, after
    # Standalone: nothing was forwarded to another router.
    assert after["deliveriesTransit"] == 0


def test_link_route_and_auto_link_counts(router_factory: RouterFactory, net: Net) -> None:
    extra = "\n".join([
        "linkRoute {", "    prefix: queue.lr", "    direction: in", "}",
        "autoLink {", "    address: queue.al", "    direction: in", "    connection: broker", "}",
        "autoLink {", "    address: queue.al", "    direction: out", "    connection: broker", "}",
    ])
    router = router_factory(extra_config=extra)
    mgmt = MgmtClient(net, net.connect(router.url))

    def counts() -> Dict[str, int]:
        return mgmt.query("router", ["linkRouteCount", "autoLinkCount"])[0]

    assert counts() == {"linkRouteCount": 1, "autoLinkCount": 2}
    mgmt.create("router.config.linkRoute", "lr2", {"prefix": "queue.lr2", "direction": "out"})
    assert counts() == {"linkRouteCount": 2, "autoLinkCount": 2}
    mgmt.delete("router.config.linkRoute", "lr2")
    assert counts() == {"linkRouteCount": 1, "autoLinkCount": 2}


def test_auto_links_and_link_routes_answer_their_deprecated_column_names(
        router_factory: RouterFactory, net: Net) -> None:
    """Scripts written for old qdrouterd releases ask for 'addr', 'dir' and 'externalAddr';
    qdrouterd 1.19's core agent still answers them, so must we."""
    router = router_factory(extra_config="\n".join([
        "linkRoute {", "    prefix: queue.lr", "    direction: out", "}",
        "autoLink {", "    address: queue.al", "    direction: in", "    connection: broker",
        "    externalAddress: /queue/al", "}",
    ]))
    mgmt = MgmtClient(net, net.connect(router.url))
    [auto_link] = mgmt.query("router.config.autoLink", ["addr", "dir", "externalAddr", "operStatus"])
    assert auto_link == {"addr": "queue.al", "dir": "in", "externalAddr": "/queue/al",
                         "operStatus": "inactive"}
    [link_route] = mgmt.query("router.config.linkRoute", ["prefix", "dir"])
    assert link_route == {"prefix": "queue.lr", "dir": "out"}
    # With no attribute names, the columns are qdrouterd's: the old names come too.
    [everything] = mgmt.query("router.config.autoLink")
    assert everything["addr"] == everything["address"] == "queue.al"
