"""Bounded output: the bytes the router has handed proton for a connection and not yet
written to its socket, per connection and for the whole router.

A consumer that grants unlimited credit and never reads its socket would otherwise have the
router copy every message meant for it into proton's buffers for ever. Instead, once a
connection's queued output passes ``per_connection`` bytes (or the router's total passes
``router_total``), the connection is *blocked*: its outgoing links count as having no
credit, so the forwarder sends them nothing more. Messages then wait where a consumer
without credit makes them wait: unsettled and anycast ones in their producers, whose credit
stops (each producer holds at most its window, linkCapacity), multicast copies in a bounded
backlog that holds no producer (core/multicast.py), older copies dropped and counted. The
connection is unblocked, and its links get their credit back, when its socket has taken
what was queued.

qdrouterd does the same per session (its Q3 limit: 512 KiB queued, resumed below 256 KiB;
src/message.c, QD_QLIMIT_Q3_*). Here the count is per connection, in the bytes handed to
pn_link_send plus a frame's overhead per message, and reset to what proton still holds
(pn_session_outgoing_bytes, nonzero only while the peer's session window is closed) each
time the transport has written everything it had. Counted once per link per batch of sends,
not per message: a batch may pass the limit by what one loop turn decided for that
connection. Inter-router control links are never blocked (the routing protocol must go on
however busy the data links are).
"""

from __future__ import annotations

from typing import Any, Callable, List

from ...core.links import CONTROL, CoreLink
from ..bindings.proton_ffi import lib

# Per-connection ceiling of queued output, and the router-wide one (docs/routing.md, "Limits").
PER_CONNECTION_BYTES = 1024 * 1024
ROUTER_TOTAL_BYTES = 64 * 1024 * 1024
# What one transfer frame adds to a message's bytes, rounded up: frame header, transfer
# performative with an 8-byte delivery tag.
FRAME_OVERHEAD = 48


class OutboundLimits:
    """Per-connection and router-wide bounds on queued output, with back-pressure.

    ``resume(link)`` gives a consumer link its credit back (read from proton) and sends what
    waits for it; ``flush()`` writes out the sends and credit that decided; ``blocked(link)``
    tells the forwarder a consumer link's connection stopped taking output; ``unblocked(
    connection)`` tells of a connection taking output again (link-routed streams wait for
    that: amqp/links/routed_streams.py). The connection objects carry ``out_queued``,
    ``out_blocked`` and ``outbound`` (amqp/connections/connection.py)."""

    def __init__(self, resume: Callable[[CoreLink], None], flush: Callable[[], None],
                 blocked: Callable[[CoreLink], None],
                 per_connection: int = PER_CONNECTION_BYTES,
                 router_total: int = ROUTER_TOTAL_BYTES,
                 unblocked: Callable[[Any], None] | None = None) -> None:
        self.resume = resume
        self.unblocked = unblocked
        self.flush = flush
        self.blocked = blocked
        self.per_connection = per_connection
        self.router_total = router_total
        # Bytes queued toward all sockets, by this count.
        self.total = 0
        # Times a connection was blocked, and connections blocked now (for management).
        self.blocked_count = 0
        self.blocked_now = 0

    def account(self, connection: Any, size: int) -> None:
        """``size`` more bytes were handed to proton for ``connection``."""
        queued = connection.out_queued + size
        connection.out_queued = queued
        self.total += size
        if connection.outbound is None:
            connection.outbound = self
        if not connection.out_blocked and (queued > self.per_connection or self.total > self.router_total):
            self._block(connection)

    def drained(self, connection: Any) -> None:
        """``connection``'s transport has written all it could: what is still queued is
        what proton holds for a peer whose session window is closed."""
        queued = connection.out_queued
        residual = _session_bytes(connection)
        self.total += residual - queued
        connection.out_queued = residual
        if connection.out_blocked and residual <= self.per_connection // 2 and (
                residual == 0 or self.total <= self.router_total):
            self._unblock(connection)

    def closed(self, connection: Any) -> None:
        """``connection`` is released: its queued output is gone."""
        self.total -= connection.out_queued
        connection.out_queued = 0
        if connection.out_blocked:
            connection.out_blocked = False
            self.blocked_now -= 1

    def _block(self, connection: Any) -> None:
        connection.out_blocked = True
        connection.out_blocked_count += 1
        self.blocked_count += 1
        self.blocked_now += 1
        for link in _consumer_links(connection):
            link.credit = 0
            link.blocked = True
            self.blocked(link)

    def _unblock(self, connection: Any) -> None:
        connection.out_blocked = False
        self.blocked_now -= 1
        for link in _consumer_links(connection):
            link.blocked = False
            self.resume(link)
        if self.unblocked is not None:
            self.unblocked(connection)
        self.flush()


def _consumer_links(connection: Any) -> List[CoreLink]:
    return [link for link in list(connection.links.values())
            if isinstance(link, CoreLink) and not link.incoming and link.kind != CONTROL
            and link.handle is not None]


def _session_bytes(connection: Any) -> int:
    """What proton holds in its sessions' outgoing buffers for ``connection``'s links."""
    sessions = set()
    for link in connection.links.values():
        handle = getattr(link, "handle", None)
        if handle is not None and not getattr(link, "incoming", True):
            sessions.add(lib.pn_link_session(handle))
    return sum(int(lib.pn_session_outgoing_bytes(session)) for session in sessions)
