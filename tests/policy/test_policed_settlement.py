"""Settlement on a policed producer link (the router reads each message through the policy
check): a producer that settles first must settle the consumer's copy, and nothing else."""

from __future__ import annotations

from tests.policy.harness import PolicyRouter, login, users
from tests.policy.test_enforcement import group, policy_body
from tests.router.amqpclient import Net, msg


def test_producer_settling_first_on_a_policed_link(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(policy_body(group("g", "u1", maxMessageSize=1000)), users=users("u1"))
    client = login(net, router.url, "u1", "v.example")
    receiver = client.receiver("settle-first", settle=None, credit=10)
    sender = client.sender("settle-first")
    sent = sender.link.delivery("first")
    sender.link.send(msg("kept").encode())
    sender.link.advance()
    net.wait(lambda: len(receiver.received) == 1, what="the message at the consumer")
    held = receiver.unsettled[0]
    sent.settle()  # the producer no longer cares about the outcome
    net.wait(lambda: bool(held.settled), what="the router settling the consumer's copy")
    net.pump(0.3)
    assert receiver.bodies() == ["kept"], "only the one message reaches the consumer"
