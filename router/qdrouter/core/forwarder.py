"""Message forwarding: pick outgoing links per distribution, hold what cannot move yet,
and hand credit back to producers only as their messages leave the router.

Memory stays bounded: a producer holds at most ``link_capacity`` credit, and the router
returns credit only when a message has been handed to a consumer (or given an outcome).
"""

from __future__ import annotations

from typing import Any, List, Protocol, Set

from .address_table import MULTICAST, UNAVAILABLE, Address, AddressTable
from .links import CoreLink, InFlight
from .outcomes import ACCEPTED, MODIFIED, RELEASED

DEFAULT_LINK_CAPACITY = 250


class DeliveryIO(Protocol):
    """What the core asks of the protocol adaptor."""

    def transmit(self, link: CoreLink, message: InFlight, presettled: bool) -> None:
        """Send ``message`` on ``link``; for unsettled sends record the outgoing delivery in
        ``message.out_delivery`` and ``link.unsettled``."""

    def finish_incoming(self, message: InFlight, outcome: int) -> None:
        """Give the incoming delivery ``outcome`` and settle it (no-op if already gone)."""


class Forwarder:
    def __init__(
        self, table: AddressTable, io: DeliveryIO, link_capacity: int = DEFAULT_LINK_CAPACITY
    ) -> None:
        self.table = table
        self.io = io
        self.link_capacity = link_capacity
        # Incoming links owed credit since the adaptor last flushed.
        self.credit_dirty: Set[CoreLink] = set()

    # ---- links -------------------------------------------------------------------------
    def producer_attached(self, link: CoreLink) -> None:
        if link.address_key is not None:
            link.address = self.table.get(link.address_key)
            link.address.producers.append(link)
        if link.anonymous or link.address.routable():
            self._open_window(link)

    def producer_detached(self, link: CoreLink) -> None:
        address: Address | None = link.address
        if address is not None:
            _remove(address.producers, link)
            self.table.discard_if_unused(address)
        # Proton frees the link's deliveries: nothing may point at them any more.
        for message in link.unsettled.values():
            message.delivery = None
        link.unsettled.clear()
        link.handle = None
        self.credit_dirty.discard(link)

    def consumer_attached(self, link: CoreLink) -> None:
        address = self.table.get(link.address_key or "")
        link.address = address
        address.consumers.append(link)
        if len(address.consumers) == 1 and address.routable():
            for producer in address.producers:
                self._open_window(producer)

    def consumer_detached(self, link: CoreLink) -> None:
        """Return every message the consumer held: its backlog copies are dropped, and its
        unsettled deliveries go back to their senders as modified (delivery-failed), since
        the consumer may have seen them."""
        address: Address = link.address
        _remove(address.consumers, link)
        link.credit = 0
        while link.backlog:
            self._copy_done(link.backlog.popleft())
        for message in list(link.unsettled.values()):
            message.out_delivery = None
            message.out_link = None
            link.counters.modified += 1
            self.io.finish_incoming(message, MODIFIED)
        link.unsettled.clear()
        link.outstanding = 0
        link.handle = None
        if not address.consumers:
            while address.undelivered:
                self._no_route(address, address.undelivered.popleft())
        self.table.discard_if_unused(address)

    def consumer_credit(self, link: CoreLink, credit: int) -> None:
        link.credit = credit
        address: Address = link.address
        backlog = link.backlog
        while link.credit > 0 and backlog:
            message = backlog.popleft()
            self._send(link, message, True)
            self._copy_done(message)
        queue = address.undelivered
        while link.credit > 0 and queue:
            message = queue.popleft()
            self._send(link, message, message.settled)
            self._release_credit(message.in_link)

    def consumer_settled(self, link: CoreLink) -> None:
        link.outstanding -= 1

    # ---- messages ----------------------------------------------------------------------
    def forward(self, message: InFlight, address: Address | None) -> None:
        """Route one message that arrived on ``message.in_link`` to ``address``."""
        message.in_link.credit -= 1
        if address is not None and address.handler is not None:
            self._to_handler(address, message)
            return
        if address is None or not address.consumers or address.distribution == UNAVAILABLE:
            self._no_route(address, message)
            return
        address.counters.deliveries_ingress += 1
        if address.distribution == MULTICAST:
            self._multicast(address, message)
            return
        link = self._pick(address)
        if link is None:
            address.undelivered.append(message)
            return
        self._send(link, message, message.settled)
        self._release_credit(message.in_link)

    def _to_handler(self, address: Address, message: InFlight) -> None:
        counters = address.counters
        counters.deliveries_ingress += 1
        counters.deliveries_to_container += 1
        outcome = address.handler(message)  # type: ignore[misc]
        if not message.settled:
            self.io.finish_incoming(message, outcome)
        self._release_credit(message.in_link)

    def inject(self, payload: bytes, address_key: str | None, origin: CoreLink) -> bool:
        """Send a message made inside the router (a management reply) to ``address_key``,
        pre-settled. False when there is nowhere to send it."""
        address = self.table.find(address_key) if address_key else None
        if address is None or address.handler is not None:
            return False
        address.counters.deliveries_from_container += 1
        self.forward(InFlight(payload, payload, origin, None, True), address)
        return True

    def _pick(self, address: Address) -> CoreLink | None:
        consumers = address.consumers
        count = len(consumers)
        start = address.next_index % count
        if address.distribution == MULTICAST:
            return None
        best: CoreLink | None = None
        if address.distribution == "closest":
            for offset in range(count):
                candidate = consumers[(start + offset) % count]
                if candidate.credit > 0:
                    best = candidate
                    break
        else:
            least = -1
            for offset in range(count):
                candidate = consumers[(start + offset) % count]
                if candidate.credit > 0 and (least < 0 or candidate.outstanding < least):
                    best = candidate
                    least = candidate.outstanding
                    if least == 0:
                        break
        if best is not None:
            address.next_index = start + 1
        return best

    def _multicast(self, address: Address, message: InFlight) -> None:
        # Copies go out pre-settled; the sender's delivery is accepted once every copy has
        # left the router (see docs/routing.md).
        for link in address.consumers:
            if link.credit > 0:
                self._send(link, message, True)
            else:
                message.copies_pending += 1
                link.backlog.append(message)
        if message.copies_pending == 0:
            self._multicast_done(message)

    def _copy_done(self, message: InFlight) -> None:
        message.copies_pending -= 1
        if message.copies_pending == 0:
            self._multicast_done(message)

    def _multicast_done(self, message: InFlight) -> None:
        if not message.settled:
            self.io.finish_incoming(message, ACCEPTED)
        self._release_credit(message.in_link)

    def _send(self, link: CoreLink, message: InFlight, presettled: bool) -> None:
        link.credit -= 1
        counters = link.counters
        counters.delivered += 1
        if presettled:
            counters.presettled += 1
        else:
            link.outstanding += 1
        link.address.counters.deliveries_egress += 1
        self.io.transmit(link, message, presettled)

    def _no_route(self, address: Address | None, message: InFlight) -> None:
        in_link = message.in_link
        if message.settled:
            in_link.counters.dropped_presettled += 1
            if address is not None:
                address.counters.dropped_presettled += 1
        else:
            if address is not None:
                address.counters.released_no_route += 1
            self.io.finish_incoming(message, RELEASED)
        if in_link.anonymous:
            self._release_credit(in_link)

    def _release_credit(self, link: CoreLink) -> None:
        # Credit returns only while the producer's address has somewhere to go.
        if link.handle is None:
            return
        if link.anonymous or link.address.routable():
            link.owed_credit += 1
            link.credit += 1
            self.credit_dirty.add(link)

    def _open_window(self, link: CoreLink) -> None:
        grant = self.link_capacity - link.credit
        if grant > 0 and link.handle is not None:
            link.owed_credit += grant
            link.credit += grant
            self.credit_dirty.add(link)

    def take_credit(self) -> List[CoreLink]:
        """Incoming links with credit to flush; the adaptor calls pn_link_flow for each."""
        if not self.credit_dirty:
            return _EMPTY
        links = list(self.credit_dirty)
        self.credit_dirty.clear()
        return links


_EMPTY: List[Any] = []


def _remove(links: List[CoreLink], link: CoreLink) -> None:
    try:
        links.remove(link)
    except ValueError:
        pass
