"""Direction ``out``: a client receiver whose source matches a link route consumes from the
container; the client's credit (and drain) is what the container's producer sees, and the
client's outcomes go back to it."""

from __future__ import annotations

from proton import Condition

from tests.router.amqpclient import ACCEPTED, MODIFIED, REJECTED, RELEASED, Net, msg
from tests.router.routerproc import Router


def test_credit_limits_hold_end_to_end(edge: Router, container: Router, net: Net) -> None:
    """The client grants 3: exactly 3 of the producer's 8 messages are delivered and settled; the
    rest stay with the container until the client grants more."""
    rcv = net.connect(edge.url).receiver("lr.credit", credit=3, refill=False)
    assert rcv.remote_opened and not rcv.remote_closed, rcv.remote_condition
    producer = net.connect(container.url).sender("lr.credit")
    tags = [producer.send(msg(i)) for i in range(8)]
    net.wait(lambda: len(rcv.received) == 3, 10, "3 messages at the client")
    net.pump(1.0)
    assert rcv.bodies() == [0, 1, 2], f"credit 3 exceeded: {rcv.bodies()}"
    assert rcv.credit == 0
    assert producer.settled_count() == 3, f"producer outcomes: {producer.outcome_counts()}"

    rcv.flow(2)
    net.wait(lambda: len(rcv.received) == 5, 10, "2 more after flow(2)")
    net.pump(0.5)
    assert rcv.bodies() == [0, 1, 2, 3, 4]
    rcv.flow(10)
    net.wait(lambda: len(rcv.received) == 8, 10, "the last 3")
    net.wait(producer.all_settled, 10, "all 8 outcomes at the producer")
    assert [producer.outcomes[t].state for t in tags] == [ACCEPTED] * 8


def test_no_credit_no_messages(edge: Router, container: Router, net: Net) -> None:
    rcv = net.connect(edge.url).receiver("lr.zero", credit=0, refill=False)
    assert rcv.remote_opened and not rcv.remote_closed, rcv.remote_condition
    producer = net.connect(container.url).sender("lr.zero")
    producer.send(msg("held"))
    net.pump(1.0)
    assert rcv.received == [] and producer.settled_count() == 0
    rcv.flow(1)
    net.wait(lambda: len(rcv.received) == 1, 10, "the held message after flow(1)")


def _drained(rcv) -> bool:  # type: ignore[no-untyped-def]
    return rcv.credit == 0 and not rcv.link.draining()


def _drain(net: Net, rcv, n: int, expect_total: int) -> None:  # type: ignore[no-untyped-def]
    """Drain ``n``; it must finish (credit 0, drain answered) quickly with ``expect_total`` received."""
    rcv.drain(n)
    net.wait(lambda: len(rcv.received) == expect_total and _drained(rcv), 5,
             f"drain({n}) to finish with {expect_total} received (have {len(rcv.received)}, "
             f"credit {rcv.credit}, draining {rcv.link.draining()})")


def test_drain_returns_what_is_available_then_credit_zero(edge: Router, container: Router,
                                                          net: Net) -> None:
    rcv = net.connect(edge.url).receiver("lr.drain", credit=0, refill=False)
    producer = net.connect(container.url).sender("lr.drain")
    for i in range(3):
        producer.send(msg(i))
    net.pump(0.3)
    assert rcv.received == []
    _drain(net, rcv, 10, 3)
    assert rcv.bodies() == [0, 1, 2]
    producer.send(msg("late"))
    net.pump(0.5)
    assert len(rcv.received) == 3, "a message arrived after the drain used up the credit"
    rcv.flow(1)
    net.wait(lambda: len(rcv.received) == 4, 10, "the late message after new credit")


def test_drain_with_nothing_available(edge: Router, container: Router, net: Net) -> None:
    rcv = net.connect(edge.url).receiver("lr.drain-empty", credit=0, refill=False)
    _drain(net, rcv, 5, 0)
    _drain(net, rcv, 5, 0)


def test_drain_again_after_a_drain_that_delivered(edge: Router, container: Router, net: Net) -> None:
    """A receiver that drains in a loop (fetch what is there, then wait): every drain must answer."""
    rcv = net.connect(edge.url).receiver("lr.drain-loop", credit=0, refill=False)
    producer = net.connect(container.url).sender("lr.drain-loop")
    producer.send(msg(0))
    net.pump(0.3)
    _drain(net, rcv, 5, 1)
    _drain(net, rcv, 5, 1)     # nothing new: must come back with credit 0
    producer.send(msg(1))
    net.pump(0.3)
    _drain(net, rcv, 5, 2)     # and a later drain must fetch the new message from the container
    assert rcv.bodies() == [0, 1]


def test_client_outcomes_reach_the_container_producer(edge: Router, container: Router, net: Net) -> None:
    rcv = net.connect(edge.url).receiver("lr.back", settle=None)
    producer = net.connect(container.url).sender("lr.back")
    tags = [producer.send(msg(i)) for i in range(3)]
    net.wait(lambda: len(rcv.received) == 3, 10, "3 messages at the client")
    net.pump(0.3)
    assert producer.settled_count() == 0, "settled before the client decided"
    rcv.settle_unsettled(ACCEPTED, count=1)
    rcv.settle_unsettled(REJECTED, count=1, condition=Condition("app:no", "not wanted"))
    rcv.settle_unsettled(MODIFIED, count=1, failed=True, undeliverable=True)
    net.wait(producer.all_settled, 10, "3 outcomes at the producer")
    a, r, m = (producer.outcomes[t] for t in tags)
    assert a.state == ACCEPTED
    assert r.state == REJECTED and r.condition is not None and r.condition.name == "app:no", r
    assert m.state == MODIFIED and m.failed and m.undeliverable, m


def test_released_by_client_goes_back(edge: Router, container: Router, net: Net) -> None:
    """A release on the routed link is the container's to handle (here: back to the producer)."""
    rcv = net.connect(edge.url).receiver("lr.rel", settle=None)
    producer = net.connect(container.url).sender("lr.rel")
    tag = producer.send(msg("x"))
    net.wait(lambda: len(rcv.received) == 1, 10, "the message at the client")
    rcv.settle_unsettled(RELEASED)
    net.wait(lambda: tag in producer.outcomes, 10, "the outcome at the producer")
    assert producer.outcomes[tag].state == RELEASED


def test_presettled_from_the_container(edge: Router, container: Router, net: Net) -> None:
    rcv = net.connect(edge.url).receiver("lr.pre", credit=50)
    producer = net.connect(container.url).sender("lr.pre", presettled=True)
    for i in range(20):
        producer.send(msg(i))
    net.wait(lambda: len(rcv.received) == 20, 10, "20 pre-settled messages at the client")
    assert rcv.bodies() == list(range(20))
    assert all(r.arrived_settled for r in rcv.received)


def test_two_routed_receivers_share_the_container_address(edge: Router, container: Router,
                                                          net: Net) -> None:
    """Each attach is its own routed link: two clients each get their credit's worth."""
    c1, c2 = net.connect(edge.url), net.connect(edge.url)
    r1 = c1.receiver("lr.shared", credit=2, refill=False)
    r2 = c2.receiver("lr.shared", credit=2, refill=False)
    producer = net.connect(container.url).sender("lr.shared")
    for i in range(6):
        producer.send(msg(i))
    net.wait(lambda: len(r1.received) + len(r2.received) == 4, 10, "4 messages over the two links")
    net.pump(0.5)
    assert (len(r1.received), len(r2.received)) == (2, 2)
    assert sorted(r1.bodies() + r2.bodies()) == [0, 1, 2, 3]
