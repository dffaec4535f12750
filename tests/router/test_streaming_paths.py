"""Paths a streamed (cut-through) message takes besides the plain one: a consumer that
settles it while the producer is still sending, and multicast copies. The clients send and
take the message a piece at a time (tests/hostile/rawclient.py), so only the router could
hold it whole. Runs against both routers (tests/router/routerkind.py)."""

from __future__ import annotations

import time
from typing import Any, Dict, List

import pytest
from proton import Delivery, Endpoint, Link

from qdrouter.tools.management_client import ManagementClient
from tests.hostile.memory import peak_mb
from tests.hostile.rawclient import LargeReceive, LargeSend, RawClient
from tests.router.routerproc import Router

MB = 1024 * 1024
# A router streaming a message holds its head, a chunk and what each consumer's connection
# may queue (1 MiB): tens of MB over an idle router, never the message itself.
STREAM_CEILING_MB = 96
LINK = "org.apache.qpid.dispatch.router.link"
# After the producer's last byte has gone, what is left is the router's to finish: the
# sockets' last few MB and the outcome (seconds even on a loaded machine).
SETTLE_WAIT_S = 30


class EarlySettler:
    """A consumer that settles its delivery with ``outcome`` once ``after`` bytes of it have
    arrived, then goes on reading its socket (whatever more comes for the settled delivery
    is taken and dropped) and takes later messages whole."""

    def __init__(self, client: RawClient, address: str, outcome: int, after: int) -> None:
        self.client = client
        self.link = client.receiver(address, 1)
        self.outcome = outcome
        self.after = after
        self.received = 0
        self.settled_early = False
        # Messages that arrived whole after the early-settled one, by their size.
        self.later: List[int] = []

    def pump(self, seconds: float = 0.0) -> None:
        self.client.pump(seconds)
        link = self.link
        while True:
            delivery = link.current
            if delivery is None:
                return
            data = link.recv(MB)
            while data:
                self.received += len(data)
                data = link.recv(MB)
            if not self.settled_early:
                if self.received < self.after:
                    return
                self.settled_early = True
                delivery.update(self.outcome)
                delivery.settle()  # (advances the link past the delivery)
                link.flow(1)
                continue
            if delivery.partial and not delivery.aborted:
                return
            if not delivery.aborted:
                self.later.append(delivery.pending)
            delivery.update(Delivery.ACCEPTED)
            delivery.settle()
            link.flow(1)


@pytest.mark.timeout(150)
@pytest.mark.c_router_bug("qdrouterd 1.19 passes the consumer's state on at once (at 6 of 48 MB) but never "
                          "settles the producer's delivery: all 48 MB sent, still unsettled 120 s later "
                          "(30 s in this test), for rejected and accepted alike")
@pytest.mark.parametrize("outcome", [Delivery.REJECTED, Delivery.ACCEPTED], ids=["rejected", "accepted"])
def test_a_consumer_settling_mid_stream_gives_the_producer_its_outcome_at_the_end(
        router: Router, outcome: int) -> None:
    """The consumer settles after 2 MB of a 48 MB message: the producer sends the rest, and
    its delivery is settled with that outcome after its last byte; nothing hangs (the
    consumer's link takes the next message) and the router's memory stays bounded while the
    rest is dropped."""
    consumer = EarlySettler(RawClient(router.url), "paths.early", outcome, after=2 * MB)
    producer = RawClient(router.url)
    sender = LargeSend(producer, "paths.early", 48 * MB)
    # (qdrouterd passes the consumer's state on at once, unsettled; the producer's delivery
    # is to be settled once all of it has arrived.)
    deadline = time.monotonic() + 120
    while not sender.done:
        assert time.monotonic() < deadline, f"the producer sent only {sender.offset} of {sender.total} bytes"
        sender.run(0.02)
        consumer.pump(0.0)
    deadline = time.monotonic() + SETTLE_WAIT_S
    while not (sender.delivery is not None and sender.delivery.settled):
        assert time.monotonic() < deadline, (
            f"the producer's delivery was not settled {SETTLE_WAIT_S} s after its last byte was sent "
            f"(consumer settled early: {consumer.settled_early})")
        sender.run(0.02)
        consumer.pump(0.0)
    assert consumer.settled_early, "the consumer never got 2 MB of the message"
    assert sender.done, (
        f"the router settled the delivery before its last byte ({sender.offset} of {sender.total})")
    assert sender.outcome == outcome, f"the producer heard {sender.outcome}, not the consumer's {outcome}"
    assert not producer.connection.state & Endpoint.REMOTE_CLOSED, "the producer's connection was closed"
    # The consumer's link goes on: the next message reaches it whole.
    small = LargeSend(RawClient(router.url), "paths.early", 64 * 1024)
    deadline = time.monotonic() + 30
    while not (consumer.later and small.outcome is not None):
        assert time.monotonic() < deadline, "the next message did not reach the consumer"
        small.run(0.02)
        consumer.pump(0.0)
    assert small.outcome == Delivery.ACCEPTED
    peak = peak_mb(router)
    assert peak < STREAM_CEILING_MB, f"the router peaked at {peak:.0f} MB dropping the rest of 48 MB"


def _outgoing_links(router: Router, address: str) -> List[Dict[str, Any]]:
    with ManagementClient(router.url, timeout=5.0) as client:
        rows = client.query(LINK)
    return [row for row in rows if row.get("linkDir") == "out" and address in str(row.get("owningAddr"))]


def _multicast_transfer(router: Router, address: str, receivers: List[LargeReceive],
                        others: List[RawClient], size: int) -> LargeSend:
    sender = LargeSend(RawClient(router.url), address, size)
    deadline = time.monotonic() + 150
    last_byte = 0.0
    while not (all(r.lengths for r in receivers) and sender.outcome is not None):
        now = time.monotonic()
        last_byte = last_byte or (now if sender.done else 0.0)
        assert now < deadline and not (last_byte and now > last_byte + SETTLE_WAIT_S), (
            f"the copies did not arrive (sent {sender.offset} of {sender.total} bytes; "
            f"received {[r.lengths for r in receivers]})")
        sender.run(0.02)
        for receiver in receivers:
            receiver.pump(0.0)
        for client in others:
            client.pump(0.0)
    return sender


@pytest.mark.timeout(200)
def test_a_streamed_multicast_message_reaches_every_consumer_intact(router: Router) -> None:
    address = "multicast.paths.both"
    receivers = [LargeReceive(RawClient(router.url), address) for _ in range(2)]
    sender = _multicast_transfer(router, address, receivers, [], 32 * MB)
    for receiver in receivers:
        assert receiver.lengths == [sender.size], (
            f"a consumer got a message of another size: {[(r.lengths, r.aborted) for r in receivers]}")
        assert receiver.intact == [True], "a copy arrived with bytes that differ from those sent"
    assert sender.outcome == Delivery.ACCEPTED
    peak = peak_mb(router)
    assert peak < STREAM_CEILING_MB, f"the router peaked at {peak:.0f} MB streaming two copies of 32 MB"


@pytest.mark.timeout(200)
@pytest.mark.differs_from_c("qdrouterd queues a copy for a multicast consumer without credit and keeps "
                            "the message's buffers for it: the producer sent all 16 MB, and neither "
                            "consumer with credit had the whole message 150 s later (30 s in this "
                            "test); qdmesh drops that copy and counts it (droppedPresettledCount)")
def test_a_multicast_consumer_without_credit_gets_no_copy_of_a_streamed_message(router: Router) -> None:
    """Its bytes are not kept for a consumer that cannot take them yet: the consumers with
    credit get the whole message, the one without gets nothing, and its link counts the
    dropped copy."""
    address = "multicast.paths.nocredit"
    receivers = [LargeReceive(RawClient(router.url), address) for _ in range(2)]
    idle = RawClient(router.url)
    idle_link = idle.receiver(address, 0)
    sender = _multicast_transfer(router, address, receivers, [idle], 16 * MB)
    for receiver in receivers:
        assert receiver.lengths == [sender.size] and receiver.intact == [True]
    # Credit now: the copy it missed does not come later.
    idle_link.flow(1)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        idle.pump(0.05)
    assert idle_link.current is None, "a consumer without credit got a copy of a streamed message"
    assert idle_link.state & Link.REMOTE_ACTIVE
    rows = _outgoing_links(router, address)
    assert len(rows) == 3, rows
    dropped = sorted(int(row.get("droppedPresettledCount") or 0) for row in rows)
    assert dropped == [0, 0, 1], f"the copy the idle consumer missed was not counted once: {rows}"
    peak = peak_mb(router)
    assert peak < STREAM_CEILING_MB, f"the router peaked at {peak:.0f} MB"
