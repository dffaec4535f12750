"""Counters of pre-settled multicast traffic (qdstat -a and -l), whichever way the router
forwarded each message: straight to every consumer when all have credit
(amqp/data_path/local_multicast.py), or through a consumer's backlog when one has none."""

from __future__ import annotations

from typing import Any, Dict, List

from tests.management.mgmt import MgmtClient
from tests.router.amqpclient import Net, msg
from tests.router.routerproc import Router


def _address_row(mgmt: MgmtClient, suffix: str) -> Dict[str, Any]:
    rows = mgmt.query("router.address", ["key", "deliveriesIngress", "deliveriesEgress"])
    matching = [row for row in rows if str(row["key"]).endswith(suffix)]
    assert len(matching) == 1, rows
    return matching[0]


def _outgoing_counts(mgmt: MgmtClient, address: str) -> List[int]:
    rows = mgmt.query("router.link", ["linkDir", "owningAddr", "deliveryCount", "presettledCount"])
    return sorted(row["deliveryCount"] for row in rows
                  if row["linkDir"] == "out" and str(row["owningAddr"] or "").endswith(address)
                  and row["presettledCount"] == row["deliveryCount"])


def _send_presettled(net: Net, router: Router, address: str, count: int) -> None:
    sender = net.connect(router.url).sender(address, presettled=True)
    net.wait(lambda: sender.credit > 0, 10, "credit for the multicast sender")
    for i in range(count):
        sender.send(msg(i))


def test_presettled_multicast_counts_each_copy(mgmt: MgmtClient, router: Router, net: Net) -> None:
    receivers = [net.connect(router.url).receiver("multicast.counted") for _ in range(3)]
    _send_presettled(net, router, "multicast.counted", 30)
    net.wait(lambda: all(len(r.received) == 30 for r in receivers), 10, "30 copies at each receiver")
    row = _address_row(mgmt, "multicast.counted")
    assert (row["deliveriesIngress"], row["deliveriesEgress"]) == (30, 90), row
    assert _outgoing_counts(mgmt, "multicast.counted") == [30, 30, 30]


def test_presettled_multicast_counts_copies_that_waited(mgmt: MgmtClient, router: Router, net: Net) -> None:
    stuck = net.connect(router.url).receiver("multicast.waited", credit=0)
    ready = [net.connect(router.url).receiver("multicast.waited") for _ in range(2)]
    _send_presettled(net, router, "multicast.waited", 10)
    net.wait(lambda: all(len(r.received) == 10 for r in ready), 10, "copies at the receivers with credit")
    stuck.flow(10)
    net.wait(lambda: len(stuck.received) == 10, 10, "the waiting copies")
    assert stuck.bodies() == list(range(10))
    row = _address_row(mgmt, "multicast.waited")
    assert (row["deliveriesIngress"], row["deliveriesEgress"]) == (10, 30), row
    assert _outgoing_counts(mgmt, "multicast.waited") == [10, 10, 10]
