"""Credit-based flow control: no consumer means no credit, slow consumers throttle
producers, the router's memory stays bounded, and drain is honoured."""

from __future__ import annotations

import pytest

from tests.management.mgmt import LINK, MgmtClient

from .amqpclient import ACCEPTED, RELEASED, Net, msg, send_and_settle
from .routerproc import Router, RouterFactory


def test_no_credit_until_a_consumer_exists(router: Router, net: Net) -> None:
    snd = net.connect(router.url).sender("flow.nobody")
    net.pump(1.0)
    assert snd.credit == 0, "a sender to an address without consumers must get no credit"
    rcv = net.connect(router.url).receiver("flow.nobody")
    net.wait(lambda: snd.credit > 0, 10, "credit once a consumer has attached")
    assert [o.state for o in send_and_settle(net, snd, [msg("finally")])] == [ACCEPTED]
    assert rcv.bodies() == ["finally"]


def test_message_sent_without_credit_waits_for_consumer(router: Router, net: Net) -> None:
    """A client that queues a message before any consumer exists gets it delivered later."""
    snd = net.connect(router.url).sender("flow.later")
    tag = snd.send(msg("queued in the client"))
    net.pump(0.5)
    assert tag not in snd.outcomes
    rcv = net.connect(router.url).receiver("flow.later")
    net.wait(lambda: tag in snd.outcomes, 10, "outcome after the consumer attached")
    assert snd.outcomes[tag].state == ACCEPTED
    assert rcv.bodies() == ["queued in the client"]


@pytest.mark.timeout(300)
def test_slow_receiver_throttles_sender_and_bounds_router_memory(router: Router, net: Net) -> None:
    """A consumer granting 10 credit and settling nothing: the producer, which sends
    whenever it has credit, must stall after a bounded number of messages (<= 1,000, far
    less than the 2,000 x 64 KiB = 128 MiB it tries to send) and the router's RSS must
    grow by less than 96 MiB. Then the consumer catches up and every message is accepted."""
    payload = b"x" * 65536
    total = 2000
    slow = net.connect(router.url).receiver("flow.slow", credit=10, refill=False, settle=None)
    snd = net.connect(router.url).sender("flow.slow")
    net.wait(lambda: snd.credit > 0, 10, "initial credit")
    rss_before = router.vm_rss_kb()
    next_i = 0

    def send_while_credit() -> None:
        nonlocal next_i
        while next_i < total and snd.credit > 0:
            snd.send(msg(payload, properties={"i": next_i}))
            next_i += 1

    for _ in range(300):          # ~3 s of trying to push everything
        send_while_credit()
        net.pump(0.01)
    rss_after = router.vm_rss_kb()
    stalled_at = next_i
    assert len(slow.received) == 10, "the consumer got exactly its credit"
    assert stalled_at < total, "the router granted credit for all 128 MiB despite a stalled consumer"
    assert stalled_at - len(slow.received) <= 1000, f"router buffered {stalled_at - 10} messages"
    growth_mib = (rss_after - rss_before) / 1024
    assert growth_mib < 96, f"router RSS grew by {growth_mib:.0f} MiB"

    # consumer catches up: the rest flows and everything is accepted
    slow.refill = True
    slow.settle_policy = ACCEPTED
    slow.settle_unsettled(ACCEPTED)
    slow.flow(100)

    def done() -> bool:
        send_while_credit()
        return snd.settled_count() == total

    net.wait(done, 240, "all 2,000 messages accepted after the consumer caught up")
    assert snd.outcome_counts() == {"accepted": total}
    assert [r.message.properties["i"] for r in slow.received] == list(range(total))


def test_drain_with_nothing_to_send_returns_credit(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("flow.drain-empty", credit=0)
    rcv.drain(10)
    net.wait(lambda: rcv.credit == 0, 5, "the router to drain the credit")
    assert rcv.received == []
    assert rcv.link.drained() == 10 or rcv.credit == 0


def test_drain_delivers_available_messages_then_zeroes_credit(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("flow.drain", credit=0, refill=False)
    snd = net.connect(router.url).sender("flow.drain")
    net.wait(lambda: snd.credit > 0, 10, "sender credit (a consumer exists)")
    tags = [snd.send(msg(i)) for i in range(3)]
    net.pump(0.5)
    assert rcv.received == [], "nothing may be delivered to a receiver without credit"
    rcv.drain(10)
    net.wait(lambda: len(rcv.received) == 3 and rcv.credit == 0, 5, "3 messages then drained credit")
    assert rcv.bodies() == [0, 1, 2]
    net.wait(lambda: all(t in snd.outcomes for t in tags), 5, "outcomes")
    # after the drain no further messages arrive until new credit is granted
    tag = snd.send(msg("after drain"))
    net.pump(0.5)
    assert len(rcv.received) == 3
    rcv.flow(1)
    net.wait(lambda: tag in snd.outcomes, 5, "delivery with fresh credit")
    assert rcv.bodies()[-1] == "after drain"


def test_receiver_credit_limits_deliveries(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("flow.limited", credit=3, refill=False)
    snd = net.connect(router.url).sender("flow.limited")
    tags = [snd.send(msg(i)) for i in range(8)]
    net.wait(lambda: len(rcv.received) == 3, 10, "3 messages")
    net.pump(0.5)
    assert len(rcv.received) == 3, "the router must not exceed the receiver's credit"
    rcv.flow(5)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "remaining messages")
    assert rcv.bodies() == list(range(8))


def test_messages_after_last_consumer_leaves_are_released(router: Router, net: Net) -> None:
    """The sender still holds credit from when a consumer existed; once the consumer is
    gone, further messages get 'released' promptly rather than hanging unsettled."""
    rc = net.connect(router.url)
    rcv = rc.receiver("flow.gone")
    snd = net.connect(router.url).sender("flow.gone")
    assert send_and_settle(net, snd, [msg("while present")])[0].state == ACCEPTED
    assert rcv.bodies() == ["while present"]
    rc.close()
    net.pump(0.3)
    outcomes = send_and_settle(net, snd, [msg(f"after {i}") for i in range(3)], timeout=5)
    assert [o.state for o in outcomes] == [RELEASED] * 3


@pytest.mark.parametrize("capacity", [20, 1000])
def test_listener_link_capacity_sets_the_senders_window(router_factory: RouterFactory, net: Net,
                                                        capacity: int) -> None:
    """A listener's linkCapacity is the credit a producer on it holds (qdrouterd's meaning):
    with a consumer that takes nothing, the producer can send exactly that many messages;
    qdstat's link capacity column shows it."""
    r = router_factory(extra_listeners={"small": {"linkCapacity": str(capacity)}})
    stalled = net.connect(r.url).receiver("flow.capacity", credit=0, refill=False, settle=None)
    snd = net.connect(r.urls["small"]).sender("flow.capacity")
    net.wait(lambda: snd.credit > 0, 10, "initial credit")
    net.pump(0.3)
    assert snd.credit == capacity, f"window {snd.credit}, listener says {capacity}"
    sent = 0
    while snd.credit > 0 and sent < capacity + 50:
        snd.send(msg(f"m{sent}"))
        sent += 1
        if sent % 10 == 0:
            net.pump(0.01)
    net.pump(0.5)
    assert sent == capacity and snd.credit == 0, f"sent {sent} before credit ran out (window {capacity})"
    mgmt = MgmtClient(net, net.connect(r.url))
    rows = mgmt.query(LINK, ["linkName", "capacity"])
    assert [row["capacity"] for row in rows if row["linkName"] == snd.link.name] == [capacity]
    stalled.flow(capacity)
    net.wait(lambda: len(stalled.received) == capacity, 20, "all held messages delivered")
    stalled.settle_unsettled(ACCEPTED)
    net.wait(lambda: snd.settled_count() == capacity, 20, "every message accepted")
