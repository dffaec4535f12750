"""Messages around the size where the router stops reading in one step (64 KiB), and a
delivery its producer aborts half way: what consumers receive, and what producers hear."""

from __future__ import annotations

from typing import List

import pytest
from proton import Message

from .amqpclient import ACCEPTED, FAST_READ_MAX, SIZES, Net, message_of_size, send_and_settle
from .routerproc import Router


@pytest.mark.parametrize("presettled", [False, True], ids=["unsettled", "presettled"])
def test_sizes_around_the_one_step_read_arrive_whole(router: Router, net: Net, presettled: bool) -> None:
    address = "sizes.pre" if presettled else "sizes.unsettled"
    rcv = net.connect(router.url).receiver(address)
    snd = net.connect(router.url).sender(address, presettled=presettled)
    sent = [message_of_size(size, address) for size in SIZES]
    assert [len(m.encode()) for m in sent] == SIZES
    if presettled:
        # (A pre-settled delivery settled before it has credit is discarded by the client.)
        net.wait(lambda: snd.credit >= len(SIZES), 10, "credit for the producer")
        for m in sent:
            snd.send(m)
    else:
        outcomes = send_and_settle(net, snd, sent, timeout=20)
        assert [o.state for o in outcomes] == [ACCEPTED] * len(SIZES)
    net.wait(lambda: len(rcv.received) == len(SIZES), 20,
             f"every message at the receiver (have {[len(r.raw) for r in rcv.received]})")
    assert [len(r.raw) for r in rcv.received] == SIZES
    assert [r.message.body for r in rcv.received] == [m.body for m in sent]


def test_aborted_delivery_is_dropped_and_the_link_goes_on(router: Router, net: Net) -> None:
    """A producer sends part of a large message, then aborts it (AMQP 1.0 2.6.14): the consumer
    never sees it, and the next message on the same link arrives."""
    rcv = net.connect(router.url).receiver("sizes.abort")
    snd = net.connect(router.url).sender("sizes.abort")
    net.wait(lambda: snd.credit > 0, 10, "credit for the producer")
    partial = message_of_size(FAST_READ_MAX * 3, "sizes.abort").encode()[:FAST_READ_MAX + 100]
    delivery = snd.link.delivery("aborted")
    snd.link.send(partial)  # no advance: the delivery stays open (more to come)
    net.pump(0.5)  # the first frames reach the router
    delivery.abort()
    after = Message(address="sizes.abort", body="after the aborted one")
    outcomes = send_and_settle(net, snd, [after])
    assert outcomes[0].state == ACCEPTED
    net.wait(lambda: len(rcv.received) == 1, 10, "the message after the aborted one")
    net.pump(0.3)
    bodies: List[object] = [r.message.body for r in rcv.received]
    assert bodies == ["after the aborted one"]
