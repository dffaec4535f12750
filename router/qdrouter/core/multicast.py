"""Multicast copies: one pre-settled copy per consumer (and per router beyond), a bounded
backlog for consumers that cannot take them yet, and the producer's outcome and credit once
every copy has left.

A copy for a consumer without credit waits in its backlog and holds its producer (whose
credit comes back once every copy has left), as flow control asks: nothing is lost to a
consumer that merely grants credit slowly. A copy for a consumer whose connection has
stopped taking output (it does not read its socket: amqp/data_path/outbound.py) waits too, but holds
nobody: one consumer that does not read holds back neither the producer nor, through it,
the other consumers. Either way a backlog holds at most its link's ``capacity`` copies;
older ones are dropped and counted (``droppedPresettledCount`` on the consumer's link, the
router's ``droppedPresettledDeliveries``), as qdrouterd drops pre-settled deliveries queued
on an outgoing link at capacity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .address_table import Address
from .links import CoreLink, InFlight
from .mesh_routes import MeshRoutes
from .outcomes import ACCEPTED

if TYPE_CHECKING:
    from .forwarder import DeliveryIO


class MulticastCopies:
    """A mixin of the Forwarder (core/forwarder.py), which provides the methods declared here."""

    mesh: MeshRoutes | None
    uplink: Address | None
    io: DeliveryIO

    def send(self, link: CoreLink, message: InFlight, presettled: bool,
             address: Address | None = None) -> None:
        raise NotImplementedError

    def release_credit(self, link: CoreLink) -> None:
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
                self.send(link, message, True, address)
            elif message.streamed:
                # A streamed message cannot wait: its bytes go on as they arrive. The copy
                # for a consumer without credit is dropped (docs/routing.md).
                link.counters.dropped_presettled += 1
                address.counters.dropped_presettled += 1
            elif link.blocked:
                self._queue_copy(link, _loose_copy(message), address)
            else:
                message.copies_pending += 1
                self._queue_copy(link, message, address)
        mesh = self.mesh
        if address.remote and mesh is not None:
            origin = message.ingress or mesh.my_id
            for link in mesh.multicast_links(address.remote, origin, message.trace or ()):
                self.send(link, message, True, address)
        if message.copies_pending == 0:
            self._multicast_done(message)

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
        if message.copies_pending > 0:  # (a loose copy holds nobody: its count stays 0)
            message.copies_pending -= 1
            if message.copies_pending == 0:
                self._multicast_done(message)

    def _multicast_done(self, message: InFlight) -> None:
        if not message.settled:
            self.io.finish_incoming(message, ACCEPTED)
        self.release_credit(message.in_link)

    def consumer_blocked(self, link: CoreLink) -> None:
        """``link``'s connection stopped taking output: the copies waiting for it no longer
        hold their producers (each becomes a loose copy, in its place)."""
        backlog = link.backlog
        for index, message in enumerate(backlog):
            if message.copies_pending > 0:
                backlog[index] = _loose_copy(message)
                self._copy_done(message)


def _loose_copy(message: InFlight) -> InFlight:
    """A copy of pre-settled ``message`` that holds neither its producer nor its outcome."""
    copy = InFlight(message.payload, message.raw, message.in_link, None, True)  # type: ignore[arg-type]
    copy.key = message.key
    copy.ingress = message.ingress
    copy.trace = message.trace
    copy.ma_span = message.ma_span
    return copy


_UNSET = object()
