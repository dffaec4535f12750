"""Copies waiting for a link that carries a streamed message.

A link carries one message at a time while a streamed one is on it (amqp/data_path/streaming.py): its
credit is held at 0, so the forwarder sends it nothing else, but for multicast copies toward
other routers, which go without waiting for credit. Written into the link then, a copy's
bytes would join the streamed delivery's. So a pre-settled copy waits here for the streamed
message's last byte, within a bound of its own, and goes on after it; past the bound it is
dropped and counted (``droppedPresettledCount``), as a multicast consumer's copy is at its
link's capacity. A streamed copy cannot wait (its bytes are not kept): amqp/data_path/streaming.py
drops it the same way. (An unsettled message never comes here, the forwarder sending those
only on credit; should one, it waits unbounded by this, as its producer's credit bounds it,
for it must reach its consumer or get an outcome.)
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Deque, Dict, Tuple

from ...core.links import CoreLink, InFlight

# The most a link's waiting copies may hold, as the bound on a connection's queued output
# (amqp/data_path/outbound.py): beyond, copies are dropped rather than kept for a long message.
WAIT_BYTES = 1024 * 1024


class LinkTurns:
    """``send(link, message, presettled)`` sends a message whose turn has come."""

    def __init__(self, send: Callable[[CoreLink, InFlight, bool], None]) -> None:
        self.send = send
        self.waiting: Dict[CoreLink, Deque[Tuple[InFlight, bool]]] = {}
        self.held_bytes: Dict[CoreLink, int] = {}

    def wait(self, link: CoreLink, message: InFlight, presettled: bool = True) -> None:
        """``message`` goes on ``link`` once its stream has ended (or is dropped)."""
        queue = self.waiting.setdefault(link, deque())
        size = len(message.raw or b"")
        held = self.held_bytes.get(link, 0)
        if presettled and (held + size > WAIT_BYTES or len(queue) >= link.capacity):
            link.counters.dropped_presettled += 1
            return
        queue.append((message, presettled))
        self.held_bytes[link] = held + size

    def go(self, link: CoreLink) -> None:
        """``link``'s stream has ended: the copies that waited go, in their order (to
        nobody, harmlessly, if the link has gone)."""
        queue = self.waiting.pop(link, None)
        self.held_bytes.pop(link, None)
        for message, presettled in queue or ():
            self.send(link, message, presettled)
