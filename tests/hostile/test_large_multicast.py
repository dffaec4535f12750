"""Streamed (cut-through) multicast copies toward other routers: the link to a router beyond
carries one message at a time, as a consumer's link does, so a streamed copy's bytes and
another message's never mix on it, and the router's memory stays bounded. Runs against both
routers (tests/router/routerkind.py)."""

from __future__ import annotations

import time
from typing import Any, List, Tuple

import pytest
from proton import Delivery

from qdrouter.tools.management_client import ManagementClient
from tests.mesh.conftest import MeshFactory
from tests.mesh.traffic import address_row
from tests.router.routerproc import Router

from .memory import peak_mb, rss_mb
from .rawclient import LargeReceive, LargeSend, RawClient

MB = 1024 * 1024
ADDRESS = "multicast.large.mesh"
# As tests/hostile/test_large_messages.py: tens of MB over an idle router, never the message.
STREAM_CEILING_MB = 96


@pytest.mark.timeout(240)
def test_other_multicast_messages_do_not_mix_into_a_streamed_copy_toward_another_router(
        mesh_factory: MeshFactory) -> None:
    """While a 32 MB multicast message streams from A to B's consumer, small multicast
    messages from another producer on A go to B too: the consumer gets every message whole,
    each byte as sent."""
    mesh = mesh_factory([("B", "A", 1)])
    receiver = LargeReceive(RawClient(mesh["B"].url), ADDRESS, credit=100)
    deadline = time.monotonic() + mesh.timers.convergence_bound
    while (address_row(mesh, "A", ADDRESS) or {}).get("remoteCount") != 1:
        assert time.monotonic() < deadline, "A never learnt of B's consumer"
        receiver.pump(0.2)
    large = LargeSend(RawClient(mesh["A"].url), ADDRESS, 32 * MB)
    small_client = RawClient(mesh["A"].url)
    small_link = small_client.sender(ADDRESS)
    smalls: list[LargeSend] = []
    deadline = time.monotonic() + 180
    while large.outcome is None or (smalls and smalls[-1].outcome is None):
        assert time.monotonic() < deadline, (
            f"the messages did not go (large: {large.offset} of {large.total} bytes; "
            f"{len(smalls)} small ones started; outcomes {large.outcome}, "
            f"{smalls[-1].outcome if smalls else None}; B's consumer got {receiver.lengths})")
        if large.offset > 2 * MB and (not smalls or smalls[-1].outcome is not None) and not large.done:
            # The next small one, while the large one is still on its way.
            smalls.append(LargeSend(small_client, ADDRESS, 8 * 1024, link=small_link))
        large.run(0.02)
        for small in smalls[-1:]:
            small.run(0.005)
        receiver.pump(0.0)
    assert smalls, "no small message was sent while the large one streamed"
    want = len(smalls) + 1
    deadline = time.monotonic() + 60
    while len(receiver.lengths) + receiver.aborted < want:
        assert time.monotonic() < deadline, (
            f"B's consumer got {len(receiver.lengths)} of {want} messages: {receiver.lengths}; "
            f"links of A {_links(mesh['A'])}, of B {_links(mesh['B'])}")
        receiver.pump(0.05)
    assert receiver.aborted == 0, "a copy was aborted"
    assert sorted(receiver.lengths) == [8 * 1024] * len(smalls) + [32 * MB], receiver.lengths
    assert all(receiver.intact), "a message arrived with bytes that differ from those sent"
    assert large.outcome == Delivery.ACCEPTED
    for rid in "AB":
        peak = peak_mb(mesh[rid])
        assert peak < STREAM_CEILING_MB, f"router {rid} peaked at {peak:.0f} MB"



def _links(router: Router) -> List[Tuple[Any, ...]]:
    """Each link that carried something: its type, direction, address and counts (for a
    failure's message)."""
    with ManagementClient(router.url, timeout=5.0) as client:
        rows = client.query("org.apache.qpid.dispatch.router.link")
    return [(row.get("linkType"), row.get("linkDir"), row.get("owningAddr"), row.get("deliveryCount"),
             row.get("droppedPresettledCount")) for row in rows if row.get("deliveryCount")]


@pytest.mark.timeout(240)
@pytest.mark.differs_from_c("qdrouterd stops reading a message's delivery past its Q2 limit but goes on "
                            "reading the connection: with the default (unbounded) session window the "
                            "producer sent 96 MB more in 2 s while the consumer read nothing; qdmesh "
                            "stops reading the producer's socket too")
def test_a_streamed_multicast_copy_toward_a_stalled_router_holds_the_producer_back(
        mesh_factory: MeshFactory) -> None:
    """B's consumer stops reading half way through a 128 MB multicast message from A: the
    copy toward B goes without waiting for credit, yet what A's link toward B cannot pass
    counts against its connection's bound, so A holds the producer back instead of
    buffering; once the consumer reads again, the rest arrives whole."""
    mesh = mesh_factory([("B", "A", 1)])
    address = "multicast.large.stalled"
    receiver = LargeReceive(RawClient(mesh["B"].url, receive_buffer=64 * 1024), address)
    deadline = time.monotonic() + mesh.timers.convergence_bound
    while (address_row(mesh, "A", address) or {}).get("remoteCount") != 1:
        assert time.monotonic() < deadline, "A never learnt of B's consumer"
        receiver.pump(0.2)
    sender = LargeSend(RawClient(mesh["A"].url), address, 128 * MB)
    deadline = time.monotonic() + 60
    while sender.offset < 16 * MB:
        assert time.monotonic() < deadline, "the first 16 MB did not go"
        sender.run(0.02)
        receiver.pump(0.0)
    # The consumer reads nothing meanwhile. Until the producer has made no progress for 2 s
    # (held back) or has sent 40 MB more (not held back): what two routers' sockets and
    # buffers take (loopback TCP buffers grow to several MB each way) passes; a router that
    # went on reading took 96 MB in 2 s. Not a fixed time: on a loaded machine a router that
    # goes on reading reads slower, and would seem to hold the producer back.
    stalled_at = last_offset = sender.offset
    last_progress = time.monotonic()
    deadline = last_progress + 120
    while sender.offset - stalled_at < 40 * MB and time.monotonic() - last_progress < 2.0:
        assert time.monotonic() < deadline, "the producer neither stopped nor sent 40 MB more"
        sender.run(0.1)
        if sender.offset != last_offset:
            last_offset, last_progress = sender.offset, time.monotonic()
    held = sender.offset - stalled_at
    assert held < 40 * MB, f"the producer sent {held // MB} MB more toward a consumer that reads nothing"
    for rid in "AB":
        assert rss_mb(mesh[rid]) < STREAM_CEILING_MB, f"router {rid} holds the message"
    deadline = time.monotonic() + 180
    while not (receiver.lengths and sender.outcome is not None):
        assert time.monotonic() < deadline, f"the rest did not arrive (sent {sender.offset} bytes)"
        sender.run(0.02)
        receiver.pump(0.0)
    assert receiver.lengths == [sender.size] and receiver.intact == [True]
    assert sender.outcome == Delivery.ACCEPTED
    for rid in "AB":
        peak = peak_mb(mesh[rid])
        assert peak < STREAM_CEILING_MB, f"router {rid} peaked at {peak:.0f} MB"
