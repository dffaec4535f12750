"""maxMessageSize while a large message streams through: the router counts its bytes as
they arrive and refuses it once past the limit, as qdrouterd 1.19 does (router_node.c,
AMQP_rx_handler): the producer's delivery is rejected with
amqp:link:message-size-exceeded and its connection closed with amqp:connection:forced;
the part already passed on is aborted toward the consumer, which never sees a whole
message. Runs against both routers (tests/router/routerkind.py)."""

from __future__ import annotations

import time

import pytest
from proton import Delivery, Endpoint

from tests.hostile.rawclient import LargeReceive, LargeSend, RawClient
from tests.policy.harness import PolicyRouter
from tests.policy.test_enforcement import group, policy_body, stats

MB = 1024 * 1024
VHOST = "v.example"


@pytest.mark.timeout(120)
def test_a_streamed_message_past_max_message_size_is_refused(policy_router: PolicyRouter) -> None:
    router = policy_router(policy_body(group("g", "anonymous", maxMessageSize=MB)))
    receiver = LargeReceive(RawClient(router.url, hostname=VHOST), "limit.stream")
    producer = RawClient(router.url, hostname=VHOST)
    sender = LargeSend(producer, "limit.stream", 16 * MB)
    deadline = time.monotonic() + 60
    while not producer.connection.state & Endpoint.REMOTE_CLOSED:
        assert time.monotonic() < deadline, f"the producer was not refused (sent {sender.offset} bytes)"
        sender.run(0.02)
        receiver.pump(0.0)
    delivery = sender.delivery
    assert delivery is not None and delivery.remote_state == Delivery.REJECTED
    assert delivery.remote.condition is not None
    assert delivery.remote.condition.name == "amqp:link:message-size-exceeded"
    assert producer.connection.remote_condition.name == "amqp:connection:forced"
    # The consumer never gets a whole message: what reached it was aborted.
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        receiver.pump(0.05)
    assert receiver.lengths == [], "a message above maxMessageSize reached the consumer whole"
    assert stats(router)["maxMessageSizeDenied"] == 1
    # The router goes on serving: a message within the limit passes.
    small = LargeSend(RawClient(router.url, hostname=VHOST), "limit.stream", 64 * 1024)
    deadline = time.monotonic() + 30
    while not (receiver.lengths and small.outcome is not None):
        assert time.monotonic() < deadline, "a message within the limit did not pass"
        small.run(0.02)
        receiver.pump(0.0)
    assert receiver.lengths == [64 * 1024] and receiver.intact == [True]
    assert small.outcome == Delivery.ACCEPTED


@pytest.mark.timeout(120)
def test_a_streamed_message_on_an_anonymous_link_is_checked_against_targets(
        policy_router: PolicyRouter) -> None:
    """Policy reads a streamed message's head as it reads a whole one's: its ``to`` must be
    one of the user's targets, or it is rejected (amqp:unauthorized-access), none of it
    reaching the address."""
    router = policy_router(policy_body(group("g", "anonymous", targets="app.*", allowAnonymousSender=True)))
    secret = LargeReceive(RawClient(router.url, hostname=VHOST), "secret.x")
    producer = RawClient(router.url, hostname=VHOST)
    sender = LargeSend(producer, "secret.x", 4 * MB, link=producer.sender(None))  # type: ignore[arg-type]
    deadline = time.monotonic() + 60
    while sender.outcome is None:
        assert time.monotonic() < deadline, f"no outcome (sent {sender.offset} of {sender.total} bytes)"
        sender.run(0.02)
        secret.pump(0.0)
    assert sender.outcome == Delivery.REJECTED
    assert sender.delivery is not None and sender.delivery.remote.condition is not None
    assert sender.delivery.remote.condition.name == "amqp:unauthorized-access"
    secret.pump(0.5)
    assert secret.lengths == [] and secret.aborted == 0, "a refused message reached the address"
