"""Multicast copies: one pre-settled copy per consumer (and per router beyond), a bounded
backlog for consumers without credit, and the producer's outcome once every copy has left.

A consumer that cannot keep up (no credit, or its connection's outbound buffer full: see
amqp/outbound.py) keeps at most its link's ``capacity`` copies waiting; older copies are
dropped and counted (``droppedPresettledCount`` on its link, the router's
``droppedPresettledDeliveries``), as qdrouterd drops pre-settled deliveries queued on an
outgoing link at capacity. The producer's credit comes back as soon as every copy is sent or
queued, so one slow consumer holds neither the producer (nor with it the other consumers)
nor more than its backlog's worth of the router's memory. An unsettled message is accepted
once every copy has left the router (sent, or dropped).
"""

from __future__ import annotations

from typing import Any

from .address_table import Address
from .links import CoreLink, InFlight
from .outcomes import ACCEPTED


class MulticastCopies:
    """A mixin of the Forwarder (core/forwarder.py), which provides the methods declared here."""

    mesh: Any
    uplink: Address | None
    io: Any

    def _send(self, link: CoreLink, message: InFlight, presettled: bool, address: Address | None) -> None:
        raise NotImplementedError

    def _release_credit(self, link: CoreLink) -> None:
        raise NotImplementedError

    def _multicast(self, address: Address, message: InFlight) -> None:
        # Copies go out pre-settled; the sender's delivery is accepted once every copy has
        # left the router (see docs/routing.md).
        in_link = message.in_link
        echo = in_link.connection if in_link.via_edge else _UNSET
        consumers = address.consumers
        uplink = self.uplink
        if uplink is not None and in_link.anonymous and echo is _UNSET and uplink is not address:
            # An edge router: an anonymous sender's multicast goes to the interior too (its
            # addressed senders reach it through their proxy link, bound as a consumer).
            consumers = consumers + uplink.consumers
        for link in consumers:
            if link.connection is echo:
                continue
            if link.credit > 0:
                self._send(link, message, True, address)
            else:
                message.copies_pending += 1
                self._queue_copy(link, message, address)
        mesh = self.mesh
        if address.remote and mesh is not None:
            origin = message.ingress or mesh.my_id
            for link in mesh.multicast_links(address.remote, origin, message.trace or ()):
                self._send(link, message, True, address)
        if message.copies_pending == 0 and not message.settled:
            self.io.finish_incoming(message, ACCEPTED)
        # Every copy is sent or waits in a bounded backlog: the producer may send the next.
        self._release_credit(in_link)

    def _queue_copy(self, link: CoreLink, message: InFlight, address: Address) -> None:
        """A copy waits in ``link``'s backlog; at capacity, the oldest waiting copy is dropped."""
        backlog = link.backlog
        if len(backlog) >= link.capacity:
            link.counters.dropped_presettled += 1
            address.counters.dropped_presettled += 1
            self._copy_done(backlog.popleft())
        backlog.append(message)

    def _copy_done(self, message: InFlight) -> None:
        """A waiting copy has left (sent or dropped)."""
        message.copies_pending -= 1
        if message.copies_pending == 0 and not message.settled:
            self.io.finish_incoming(message, ACCEPTED)


_UNSET = object()
