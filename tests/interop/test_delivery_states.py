"""The reference for tests/router/test_delivery_states.py: the C router carries a Received
state's section number and offset, and an application's own outcome with its fields, from the
consumer to the producer. qdmesh does the same, checked in one run."""

from __future__ import annotations

from tests.interop.conftest import CRouterFactory
from tests.router.amqpclient import Net, msg
from tests.router.delivery_states import EXPECTED, exchange
from tests.router.routerproc import RouterFactory


def _states_through(net: Net, url: str) -> list:
    receiver = net.connect(url).receiver("states.q", settle=None)
    sender = net.connect(url).sender("states.q")
    tags = [sender.send(msg(n)) for n in range(3)]
    net.wait(lambda: len(receiver.received) == 3, 10, "3 messages at the consumer")
    return exchange(net, receiver, sender, tags)


def test_both_routers_carry_received_and_custom_states(c_router: CRouterFactory,
                                                      router_factory: RouterFactory, net: Net) -> None:
    assert _states_through(net, c_router("C", mode="standalone").url) == [EXPECTED] * 3
    assert _states_through(net, router_factory().url) == [EXPECTED] * 3
