"""Delivery outcomes and settlement travel from the consumer back to the producer."""

from __future__ import annotations

import pytest
from proton import Condition

from .amqpclient import ACCEPTED, MODIFIED, REJECTED, RELEASED, Net, msg
from .routerproc import Router


def _one_round_trip(router: Router, net: Net, address: str, state: int, **settle_kw: object):
    rcv = net.connect(router.url).receiver(address, settle=None)
    snd = net.connect(router.url).sender(address)
    tag = snd.send(msg("payload"))
    net.wait(lambda: len(rcv.received) == 1, 10, "the message at the receiver")
    net.pump(0.2)
    assert tag not in snd.outcomes, "the router settled the sender's delivery before the consumer did"
    rcv.settle_unsettled(state, **settle_kw)  # type: ignore[arg-type]
    net.wait(lambda: tag in snd.outcomes, 10, "the outcome at the sender")
    return snd.outcomes[tag]


def test_accepted_propagates(router: Router, net: Net) -> None:
    assert _one_round_trip(router, net, "outcome.accept", ACCEPTED).state == ACCEPTED


def test_rejected_propagates_with_error(router: Router, net: Net) -> None:
    cond = Condition("amqp:precondition-failed", "consumer refused it")
    out = _one_round_trip(router, net, "outcome.reject", REJECTED, condition=cond)
    assert out.state == REJECTED
    assert out.condition is not None and out.condition.name == "amqp:precondition-failed"


def test_released_propagates(router: Router, net: Net) -> None:
    assert _one_round_trip(router, net, "outcome.release", RELEASED).state == RELEASED


def test_modified_propagates(router: Router, net: Net) -> None:
    out = _one_round_trip(router, net, "outcome.modify", MODIFIED, failed=True, undeliverable=True)
    assert out.state == MODIFIED
    assert out.failed, "delivery-failed flag of the modified outcome must reach the sender"


def test_mixed_outcomes_map_to_the_right_messages(router: Router, net: Net) -> None:
    """Outcomes are matched to their own delivery, not just counted."""
    rcv = net.connect(router.url).receiver("outcome.mixed", settle=None)
    snd = net.connect(router.url).sender("outcome.mixed")
    plan = [ACCEPTED, REJECTED, RELEASED, ACCEPTED, MODIFIED, REJECTED, ACCEPTED, RELEASED]
    tags = [snd.send(msg(i)) for i in range(len(plan))]
    net.wait(lambda: len(rcv.received) == len(plan), 10, "all messages at the receiver")
    by_body = {r.message.body: r.delivery for r in rcv.received}
    for i in reversed(range(len(plan))):   # settle in a different order from arrival
        dlv = by_body[i]
        assert dlv is not None
        dlv.update(plan[i])
        dlv.settle()
    rcv.unsettled = []
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "all outcomes")
    assert [snd.outcomes[t].state for t in tags] == plan


def test_sender_not_settled_while_consumer_holds_message(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("outcome.hold", settle=None)
    snd = net.connect(router.url).sender("outcome.hold")
    tag = snd.send(msg("held"))
    net.wait(lambda: len(rcv.received) == 1, 10, "delivery")
    net.pump(1.0)
    assert tag not in snd.outcomes
    rcv.settle_unsettled(ACCEPTED)
    net.wait(lambda: tag in snd.outcomes, 10, "outcome")
    assert snd.outcomes[tag].state == ACCEPTED


@pytest.mark.timeout(120)
def test_ten_thousand_unsettled_messages_all_accepted(router: Router, net: Net) -> None:
    total = 10_000
    rcv = net.connect(router.url).receiver("outcome.bulk", credit=250)
    snd = net.connect(router.url).sender("outcome.bulk")
    net.wait(lambda: snd.credit > 0, 10, "credit")
    next_i = 0

    def pump_sends() -> bool:
        nonlocal next_i
        while next_i < total and snd.credit > 0:
            snd.send(msg(next_i, properties={"seq": next_i}))
            next_i += 1
        return snd.settled_count() == total

    net.wait(pump_sends, 90, "10,000 outcomes")
    assert snd.outcome_counts() == {"accepted": total}
    assert len(rcv.received) == total
    assert rcv.bodies() == list(range(total)), "one consumer on one link: order is preserved"


def test_unsettled_delivery_to_receiver_that_closes_link_gets_outcome(router: Router, net: Net) -> None:
    """A consumer detaches holding unsettled deliveries: each message is re-routed to the
    remaining consumer (and accepted there) or returned to the sender released/modified."""
    leaving = net.connect(router.url).receiver("outcome.detach", settle=None, credit=5, refill=False)
    snd = net.connect(router.url).sender("outcome.detach")
    tags = [snd.send(msg(i)) for i in range(5)]
    net.wait(lambda: len(leaving.received) == 5, 10, "5 messages at the leaving consumer")
    staying = net.connect(router.url).receiver("outcome.detach")
    tags += [snd.send(msg(i)) for i in range(5, 10)]
    net.wait(lambda: len(staying.received) >= 1, 10, "later messages at the staying consumer")
    leaving.close()
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "an outcome for every message")
    states = [snd.outcomes[t].state for t in tags]
    assert set(states) <= {ACCEPTED, RELEASED, MODIFIED}, states
    for i, s in enumerate(states):
        if s == ACCEPTED:
            assert i in staying.bodies(), f"message {i} accepted but never reached a live consumer"

