"""Large messages stream through the router: their bytes go on to the consumer as they
arrive, so the router's memory stays bounded whatever a message's size, and a slow
consumer holds its producer back instead of having the router buffer the message.

The clients send and take the message a piece at a time (rawclient.LargeSend and
LargeReceive), so only the router could hold it whole. They run against both routers.
"""

from __future__ import annotations

import time

import pytest
from proton import Delivery, Endpoint

from tests.linkroute.conftest import EdgeFactory
from tests.linkroute.lrutil import both_ways
from tests.mesh.conftest import MeshFactory
from tests.mesh.traffic import address_row
from tests.router.routerproc import Router

from .memory import peak_mb, rss_mb
from .rawclient import LargeReceive, LargeSend, RawClient, transfer

MB = 1024 * 1024
# A router streaming a message holds its head, a chunk and what the consumer's connection
# may queue (1 MiB): tens of MB over an idle router, not the message. The C router peaks
# at 26-28 MB here; a router holding the message whole needs several times its size.
STREAM_CEILING_MB = 96


@pytest.mark.timeout(180)
def test_a_256_mb_message_streams_through_with_bounded_memory(router: Router) -> None:
    receiver = LargeReceive(RawClient(router.url), "large.stream")
    sender = LargeSend(RawClient(router.url), "large.stream", 256 * MB)
    transfer(sender, receiver, 150)
    assert receiver.lengths == [sender.size]
    assert receiver.intact == [True], "the body arrived with bytes that differ from those sent"
    assert sender.outcome == Delivery.ACCEPTED
    peak = peak_mb(router)
    assert peak < STREAM_CEILING_MB, f"the router peaked at {peak:.0f} MB streaming a 256 MB message"


@pytest.mark.timeout(180)
@pytest.mark.differs_from_c("qdrouterd stops reading a message's delivery past its Q2 limit but goes on "
                            "reading the connection: with the default (unbounded) session window the "
                            "producer sent the whole 128 MB into it (peak 85 MB at 64 MB) while the "
                            "consumer read nothing; qdmesh stops reading the producer's socket too")
def test_a_slow_consumer_holds_the_producer_back(router: Router) -> None:
    """The consumer stops reading half way: the producer can send little more than the
    router and the sockets between hold, and the router's memory stays bounded; once the
    consumer reads again, the rest arrives and the outcome goes back."""
    receiver = LargeReceive(RawClient(router.url, receive_buffer=64 * 1024), "large.slow",
                            outcome=Delivery.REJECTED)
    sender = LargeSend(RawClient(router.url), "large.slow", 128 * MB)
    deadline = time.monotonic() + 60
    while receiver.client and sender.offset < 16 * MB:
        assert time.monotonic() < deadline, "the first 16 MB did not go"
        sender.run(0.02)
        receiver.pump(0.0)
    # The consumer stops reading: the producer is held back.
    stalled_at = sender.offset
    sender.run(3.0)
    held = sender.offset - stalled_at
    assert held < 24 * MB, f"the producer sent {held // MB} MB more to a consumer that reads nothing"
    assert rss_mb(router) < STREAM_CEILING_MB
    transfer(sender, receiver, 120)
    assert receiver.lengths == [sender.size] and receiver.intact == [True]
    assert sender.outcome == Delivery.REJECTED, "the consumer's outcome did not reach the producer"
    peak = peak_mb(router)
    assert peak < STREAM_CEILING_MB, f"the router peaked at {peak:.0f} MB"


@pytest.mark.timeout(240)
def test_a_large_message_streams_across_two_routers(mesh_factory: MeshFactory) -> None:
    """Producer on A, consumer on B: each router streams it on (A over the inter-router
    link, with its router annotations in the head), and the outcome comes back."""
    mesh = mesh_factory([("B", "A", 1)])
    receiver = LargeReceive(RawClient(mesh["B"].url), "large.mesh")
    deadline = time.monotonic() + mesh.timers.convergence_bound
    while (address_row(mesh, "A", "large.mesh") or {}).get("remoteCount") != 1:
        assert time.monotonic() < deadline, "A never learnt of B's consumer"
        receiver.pump(0.2)
    sender = LargeSend(RawClient(mesh["A"].url), "large.mesh", 128 * MB)
    transfer(sender, receiver, 180)
    assert receiver.lengths == [sender.size] and receiver.intact == [True]
    assert sender.outcome == Delivery.ACCEPTED
    for rid in "AB":
        peak = peak_mb(mesh[rid])
        assert peak < STREAM_CEILING_MB, f"router {rid} peaked at {peak:.0f} MB"


@pytest.mark.timeout(240)
def test_a_link_routed_large_message_streams_through(edge: Router, container: Router) -> None:
    """A link-routed sender's message passes through the routing router (``edge``, whose
    link route leads to ``container``) as it arrives, bounded the same way."""
    receiver = LargeReceive(RawClient(container.url), "lr.large")
    sender = LargeSend(RawClient(edge.url), "lr.large", 128 * MB)
    transfer(sender, receiver, 180)
    assert receiver.lengths == [sender.size] and receiver.intact == [True]
    assert sender.outcome == Delivery.ACCEPTED
    for router in (edge, container):
        peak = peak_mb(router)
        assert peak < STREAM_CEILING_MB, f"a router peaked at {peak:.0f} MB"


@pytest.mark.timeout(240)
def test_a_link_routed_producer_held_past_its_idle_timeout_stays_connected(
        edge_factory: EdgeFactory, container: Router) -> None:
    """The consumer (on the route container) reads nothing for more than three times the
    producer's idle timeout: the producer is held back, yet its heartbeats still arrive, so
    its connection stays open and the message completes once the consumer reads again."""
    short = {"short": {"idleTimeoutSeconds": "3", "authenticatePeer": "no"}}
    edge = edge_factory(both_ways("lr", connection="cont"), {"cont": container.port}, active=2,
                        extra_listeners=short)
    receiver = LargeReceive(RawClient(container.url, receive_buffer=64 * 1024), "lr.held")
    producer = RawClient(f"127.0.0.1:{edge.ports['short']}")
    sender = LargeSend(producer, "lr.held", 64 * MB)
    deadline = time.monotonic() + 60
    while sender.offset < 8 * MB:
        assert time.monotonic() < deadline, "the first 8 MB did not go"
        sender.run(0.02)
        receiver.pump(0.0)
    sender.run(10.0)  # the consumer reads nothing meanwhile
    assert not producer.closed and not producer.connection.state & Endpoint.REMOTE_CLOSED, (
        f"the held producer's connection was closed: {producer.connection.remote_condition}")
    transfer(sender, receiver, 180)
    assert receiver.lengths == [sender.size] and receiver.intact == [True]
    assert sender.outcome == Delivery.ACCEPTED
    assert not producer.connection.state & Endpoint.REMOTE_CLOSED
