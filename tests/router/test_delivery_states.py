"""A consumer's non-terminal Received state and the fields of an outcome of its own reach the
producer through the router, as qdrouterd carries them (tests/interop/test_delivery_states.py
runs the same exchange against the C router)."""

from __future__ import annotations

from tests.router.amqpclient import Net, msg
from tests.router.delivery_states import EXPECTED, exchange
from tests.router.routerproc import Router


def test_received_and_custom_outcomes_reach_the_producer(router: Router, net: Net) -> None:
    receiver = net.connect(router.url).receiver("states.q", settle=None)
    sender = net.connect(router.url).sender("states.q")
    tags = [sender.send(msg(n)) for n in range(5)]
    net.wait(lambda: len(receiver.received) == 5, 10, "5 messages at the consumer")
    assert exchange(net, receiver, sender, tags) == [EXPECTED] * 5
