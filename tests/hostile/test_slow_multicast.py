"""A multicast consumer that never reads: the other consumers keep receiving, the router's
memory stays bounded, and the copies it could not take are dropped and counted on its link
(qdrouterd's droppedPresettledCount)."""

from __future__ import annotations

import time

import pytest

from tests.management.mgmt import LINK, MgmtClient
from tests.router.amqpclient import Net
from tests.router.routerproc import Router

from .memory import CEILING_MB, peak_mb
from .rawclient import UNLIMITED_CREDIT, Flood, RawClient

ADDRESS = "multicast.hostile"


@pytest.mark.timeout(120)
def test_multicast_consumer_that_never_reads_loses_copies_not_the_others(router: Router, net: Net) -> None:
    stuck = RawClient(router.url, receive_buffer=64 * 1024)
    stuck.receiver(ADDRESS, UNLIMITED_CREDIT)
    good = RawClient(router.url)
    good_link = good.receiver(ADDRESS, UNLIMITED_CREDIT)
    producer = Flood(RawClient(router.url), ADDRESS, 64 * 1024, presettled=True)
    received = 0
    deadline = time.monotonic() + 4.0
    while time.monotonic() < deadline:
        producer.run(0.05)
        good.pump(0.0)
        while good_link.current is not None:
            delivery = good_link.current
            good_link.recv(delivery.pending)
            good_link.advance()
            delivery.settle()
            received += 1
    peak = peak_mb(router)
    assert peak < CEILING_MB, f"the router's resident memory peaked at {peak:.0f} MB"
    # The stuck consumer holds back neither the producer nor the other consumer: more went
    # by than the stuck consumer's link (capacity 250), buffers and socket could hold.
    assert producer.sent > 1000, f"the producer could send only {producer.sent} messages"
    assert received > 500, f"the consumer that keeps up got only {received} messages"
    mgmt = MgmtClient(net, net.connect(router.url))
    links = mgmt.query(LINK, ["linkDir", "owningAddr", "droppedPresettledCount", "deliveryCount"])
    outgoing = sorted((row for row in links if row["linkDir"] == "out" and ADDRESS in str(row["owningAddr"])),
                      key=lambda row: int(row["deliveryCount"] or 0))
    assert len(outgoing) == 2, outgoing
    stuck_row, good_row = outgoing
    assert int(good_row["deliveryCount"]) >= received
    assert int(stuck_row["droppedPresettledCount"] or 0) > 0, (
        f"the stuck consumer's link counts no dropped copies: {stuck_row}")
    for client in (stuck, good, producer.client):
        client.close()
