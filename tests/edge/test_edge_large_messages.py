"""Large messages between an edge router's client and an interior router's: each router
streams the message on as its bytes arrive (the edge over its uplink), so neither holds it
whole, and the outcome comes back. The clients send and take the message a piece at a time
(tests/hostile/rawclient.py). Runs against both routers (tests/router/routerkind.py)."""

from __future__ import annotations

import pytest
from proton import Delivery

from tests.edge.edgeproc import Routers
from tests.edge.helpers import has_address, wait_edges, wait_until
from tests.hostile.memory import peak_mb
from tests.hostile.rawclient import LargeReceive, LargeSend, RawClient, transfer
from tests.router.routerproc import Router

MB = 1024 * 1024
SIZE = 64 * MB
# A router streaming a message holds its head, a chunk and what the next hop's connection may
# queue (1 MiB): tens of MB over an idle router. One holding a 64 MB message whole needs
# several times that.
STREAM_CEILING_MB = 96


def _check(sender: LargeSend, receiver: LargeReceive, routers: tuple[Router, Router]) -> None:
    assert receiver.lengths == [sender.size], f"the consumer got {receiver.lengths} bytes of {sender.size}"
    assert receiver.intact == [True], "the body arrived with bytes that differ from those sent"
    assert sender.outcome == Delivery.ACCEPTED, f"the producer heard {sender.outcome}"
    for router in routers:
        peak = peak_mb(router)
        assert peak < STREAM_CEILING_MB, f"router {router.router_id} peaked at {peak:.0f} MB"


@pytest.mark.timeout(240)
def test_a_large_message_streams_from_an_edge_to_an_interior_consumer(routers: Routers) -> None:
    interior = routers.interior("I1")
    edge = routers.edge("E1", [interior.ports["edge"]])
    wait_edges(interior, 1)
    receiver = LargeReceive(RawClient(interior.url), "large.up")
    wait_until(lambda: has_address(interior, "large.up"), what="the interior's consumer")
    sender = LargeSend(RawClient(edge.url), "large.up", SIZE)
    transfer(sender, receiver, 180)
    _check(sender, receiver, (edge, interior))


@pytest.mark.timeout(240)
def test_a_large_message_streams_from_an_interior_to_an_edge_consumer(routers: Routers) -> None:
    interior = routers.interior("I1")
    edge = routers.edge("E1", [interior.ports["edge"]])
    wait_edges(interior, 1)
    receiver = LargeReceive(RawClient(edge.url), "large.down")
    wait_until(lambda: has_address(interior, "large.down"), what="the edge's consumer at the interior")
    sender = LargeSend(RawClient(interior.url), "large.down", SIZE)
    transfer(sender, receiver, 180)
    _check(sender, receiver, (interior, edge))
