"""Message forwarding: pick outgoing links per distribution (local consumers, and other
routers of the mesh), hold what cannot move yet, and hand credit back to producers only
as their messages leave the router.

Memory stays bounded: a producer holds at most its link's ``capacity`` in credit, and the router
returns credit only when a message has been handed on (or given an outcome).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Protocol, Set

from .address_events import AddressListener, AddressResolver
from .address_table import CLOSEST, MULTICAST, UNAVAILABLE, Address, AddressTable, consumers_leaving
from .in_process import InProcessNodes
from .links import DATA, ENDPOINT, CoreLink, InFlight
from .mesh_routes import MeshRoutes, is_mobile, topological_router
from .multicast import MulticastCopies
from .next_hop import pick, topological_link
from .outcomes import MODIFIED, RELEASED
from .sends import Sends

# Seconds a message may wait for the mesh to offer a route (or credit) to another router.
HOLD_LIMIT_S = 10.0


class DeliveryIO(Protocol):
    """What the core asks of the protocol adaptor."""

    def transmit(self, link: CoreLink, message: InFlight, presettled: bool) -> None:
        """Send ``message`` on ``link``; for unsettled sends record the outgoing delivery in
        ``message.out_key`` and ``link.unsettled``."""

    def finish_incoming(self, message: InFlight, outcome: int) -> None:
        """Give the incoming delivery ``outcome`` and settle it (no-op if already gone)."""

    def read_whole(self, message: InFlight, on_whole: Callable[[bool], None]) -> None:
        """A streamed ``message`` goes to an in-process node: collect the rest of it, then call
        ``on_whole`` (False: it never will be whole)."""


class Forwarder(Sends, MulticastCopies, InProcessNodes):
    def __init__(self, table: AddressTable, io: DeliveryIO, mesh: MeshRoutes | None = None) -> None:
        super().__init__()
        self.table = table
        self.io = io
        self.mesh = mesh
        # Addresses holding messages for other routers (no route or no credit this instant),
        # with the time they started holding; see sweep_held.
        self.waiting_for_mesh: Dict[Address, float] = {}
        # Who hears of addresses changing (core/address_events.py), in the order added.
        self._address_listeners: List[AddressListener] = []
        # Where a message goes that no address here takes, and which address carries another
        # one's (an edge's uplink, an interior's edges): the edge role's, if any.
        self._resolver: AddressResolver | None = None
        # An edge router's uplink address (its one consumer: the anonymous link to the
        # interior router): multicast from anonymous senders also goes up it.
        self.uplink: Address | None = None

    def add_address_listener(self, listener: AddressListener) -> None:
        """``listener`` hears of addresses changing from now on, after those added before."""
        self._address_listeners.append(listener)

    def resolve_with(self, resolver: AddressResolver) -> None:
        """``resolver`` answers for messages no address here takes (one per router)."""
        if self._resolver is not None:
            raise ValueError("the forwarder already has an address resolver")
        self._resolver = resolver
        self.uplink = resolver.uplink_address

    def _address_changed(self, address: Address) -> None:
        for listener in self._address_listeners:
            listener.address_changed(address)

    def _local_address(self, key: str, present: bool) -> None:
        if is_mobile(key):
            for listener in self._address_listeners:
                listener.local_address(key, present)

    def _routes_changed(self, address: Address) -> None:
        for listener in self._address_listeners:
            listener.routes_changed(address)

    def _alias(self, key: str) -> Address | None:
        resolver = self._resolver
        return resolver.alias(key) if resolver is not None else None

    # ---- links -------------------------------------------------------------------------
    def producer_attached(self, link: CoreLink) -> None:
        if link.address_key is not None:
            link.address = self.table.get(link.address_key)
            link.address.producers.append(link)
        # (a link without an address is anonymous)
        if link.anonymous or (link.address is not None and self._routable(link.address)):
            self._open_window(link)
        if link.address is not None:
            self._address_changed(link.address)

    def producer_detached(self, link: CoreLink) -> None:
        address: Address | None = link.address
        if address is not None:
            _remove(address.producers, link)
            self._address_changed(address)
            self.table.discard_if_unused(address)
        # Proton frees the link's deliveries: nothing may point at them any more.
        for message in link.unsettled.values():
            message.delivery = None
        link.unsettled.clear()
        link.handle = None
        if link.credit_queued:
            self.credit_dirty.remove(link)
            link.credit_queued = False
        self.credit_held.discard(link)

    def consumer_attached(self, link: CoreLink) -> None:
        address = self.table.get(link.address_key or "")
        link.address = address
        address.consumers.append(link)
        if len(address.consumers) == 1:
            self.address_became_routable(address)
            self._local_address(address.key, True)
        self._address_changed(address)

    def address_became_routable(self, address: Address) -> None:
        if self._routable(address):
            for producer in address.producers:
                self._open_window(producer)

    def topology_changed(self) -> None:
        """Routers came or went: producers whose window closed while their destination was
        unreachable (remote consumers, `_topo/0/<router>/...`) may have a route again."""
        changed = []
        for address in self.table:
            if address.undelivered and address.remote:
                self._reroute_undelivered(address)
            if address.producers and (address.remote or topological_router(address.key) is not None):
                self.address_became_routable(address)
                changed.append(address)
        for address in changed:
            self._routes_changed(address)

    def _routable(self, address: Address) -> bool:
        if address.routable():
            return True
        other = self._alias(address.key)
        if other is not None and other is not address and other.routable():
            return True
        return topological_link(self.mesh, address.key, None) is not None

    def remote_consumers_changed(self, address: Address) -> None:
        """The mesh learned which routers consume ``address``."""
        self.address_became_routable(address)
        if not address.consumers:
            self._reroute_undelivered(address)
        if address.producers:
            self._routes_changed(address)
        self._address_changed(address)
        self.table.discard_if_unused(address)

    def consumers_leaving(self, links: List[CoreLink]) -> Set[CoreLink]:
        """Many consumers are going at once (their connection dropped): taken off their
        addresses' lists together (address_table.consumers_leaving). Detach each of those
        returned with ``listed=False``."""
        return consumers_leaving(links)

    def consumer_detached(self, link: CoreLink, listed: bool = True) -> None:
        """Return every message the consumer held: its backlog copies are dropped, and its
        unsettled deliveries go back to their senders as modified (delivery-failed), since
        the consumer may have seen them. ``listed``: still in its address's consumers (not
        taken off already by consumers_leaving)."""
        address: Address | None = link.address
        if address is not None and listed:
            _remove(address.consumers, link)
        link.credit = 0
        while link.backlog:
            self._copy_done(link.backlog.popleft())
        for message in list(link.unsettled.values()):
            message.out_key = None
            message.out_link = None
            link.counters.modified += 1
            self.io.finish_incoming(message, MODIFIED)
        link.unsettled.clear()
        link.outstanding = 0
        link.handle = None
        if address is None:
            return
        if not address.consumers:
            self._local_address(address.key, False)
            self._reroute_undelivered(address)
        self._address_changed(address)
        self.table.discard_if_unused(address)

    def _reroute_undelivered(self, address: Address) -> None:
        queue = list(address.undelivered)
        undelivered = address.undelivered
        undelivered.clear()
        # Where a message may go depends on its address and its trace only (the routers it
        # must not go back to), and sending only uses credit up: once one is held again,
        # every later one with the same trace would be too (_forward's rule for arrivals).
        # Skipping them keeps a window of held messages from being routed again in full on
        # every credit grant.
        # Where closest (or a single remote router) sent one message, every later one with
        # the same trace goes too while that link has credit: nothing else gained credit
        # meanwhile. In a busy mesh nearly every message waits once for the next router's
        # credit, so this saves routing each in full a second time.
        repeatable = not address.consumers and (address.distribution is CLOSEST or len(address.remote) == 1)
        last: CoreLink | None = None
        last_trace: Any = _UNSET
        for message in queue:
            trace = message.trace
            if undelivered and undelivered[-1].trace == trace:
                undelivered.append(message)
                continue
            if last is not None and last.credit > 0 and trace == last_trace:
                self._deliver(last, message, address)
                continue
            message.in_link.credit += 1  # forward() takes it again
            link = self._forward(message, address, False)
            if repeatable and link is not None:
                last, last_trace = link, trace

    def consumer_credit(self, link: CoreLink, credit: int) -> None:
        link.credit = credit
        if link.kind == DATA and credit > 0 and self.waiting_for_mesh:
            self._resume_mesh_waiters()
        backlog = link.backlog
        while link.credit > 0 and backlog:
            message = backlog.popleft()
            self.send(link, message, True, link.address)
            self._copy_done(message)
        address: Address | None = link.address
        if address is None:
            return
        queue = address.undelivered
        while link.credit > 0 and queue:
            head = queue[0].in_link
            if head.via_edge and head.connection is link.connection:
                break  # never back where it came from (an edge): it waits for another consumer
            message = queue.popleft()
            self._deliver(link, message, address)

    def _resume_mesh_waiters(self) -> None:
        """An inter-router link got credit: messages held for other routers move on."""
        waiting = list(self.waiting_for_mesh.items())
        self.waiting_for_mesh.clear()
        for address, since in waiting:
            self._reroute_undelivered(address)
            if address.undelivered and address in self.waiting_for_mesh:
                self.waiting_for_mesh[address] = since  # still waiting: keep its start

    def sweep_held(self, now: float, limit_s: float = HOLD_LIMIT_S) -> None:
        """Called periodically: retry messages held for other routers, and give up on them
        after ``limit_s`` (released, so the sender can decide) when no local consumer can
        take them. Nothing waits forever for a mesh that does not recover."""
        if not self.waiting_for_mesh:
            return
        waiting = list(self.waiting_for_mesh.items())
        self._resume_mesh_waiters()
        for address, since in waiting:
            if now - since < limit_s or not address.undelivered or address.consumers:
                continue
            self.waiting_for_mesh.pop(address, None)
            queue = list(address.undelivered)
            address.undelivered.clear()
            for message in queue:
                self._no_route(address, message)

    # ---- messages ----------------------------------------------------------------------
    def route(self, message: InFlight, key: str | None) -> None:
        """Route a message by address (anonymous senders, other routers)."""
        message.key = key
        address = self.table.find(key) if key else None
        if address is None:
            link = topological_link(self.mesh, key, message)
            if link is not None:
                message.in_link.credit -= 1
                self._deliver(link, message, None)
                return
        resolver = self._resolver
        if resolver is not None and (address is None or not address.routable()):
            elsewhere = resolver.unknown_address(key, message)
            if elsewhere is not None:
                address = elsewhere
        self.forward(message, address)

    def forward(self, message: InFlight, address: Address | None) -> None:
        """Route one message that arrived on ``message.in_link`` to ``address``."""
        self._forward(message, address, True)

    def _forward(self, message: InFlight, address: Address | None, arrived: bool) -> CoreLink | None:
        """forward(); ``arrived`` is False when a held message is routed again (counted
        once, when it arrived). Returns the one link the message went on, if it did."""
        message.in_link.credit -= 1
        if address is not None and address.handler is not None:
            self._to_handler(address, message)
            return None
        if (address is None or address.distribution is UNAVAILABLE
                or not (address.consumers or address.remote)):
            link = topological_link(self.mesh, address.key, message) if address is not None else None
            if link is not None:
                message.key = address.key  # type: ignore[union-attr]
                self._deliver(link, message, address)
                return link
            other = self._alias(address.key) if address is not None else None
            if other is not None and other is not address and other.routable():
                message.key = address.key  # type: ignore[union-attr]
                message.in_link.credit += 1  # taken again
                return self._forward(message, other, arrived)
            self._no_route(address, message)
            return None
        key = message.key
        if key != address.key and not (address is self.uplink or (key and key.startswith(address.key + "/"))):
            # (kept when it names a node under the address: `_edge/<id>/temp.*` routed by
            # its edge's address goes on by its own, to be told apart where the edge is)
            message.key = address.key
        if arrived and message.in_link.kind != DATA:
            # As qdrouterd: ingress counts deliveries entering the network here, not those
            # arriving from other routers (those show as transit where they were passed on).
            address.counters.deliveries_ingress += 1
        if address.distribution is MULTICAST:
            self._multicast(address, message)
            return None
        in_link = message.in_link
        if in_link.via_edge and not address.remote and all(
                consumer.connection is in_link.connection for consumer in address.consumers):
            # Its only consumers are on the edge it came from: nowhere to go (no echo).
            self._no_route(address, message)
            return None
        undelivered = address.undelivered
        if undelivered and undelivered[-1].trace == message.trace:
            # The last message that could go where this one can is still waiting, so nothing
            # it may take has credit (every grant routes the waiting ones first): it waits
            # too, behind it, in arrival order.
            undelivered.append(message)
            return None
        link = pick(address, message, self.mesh)
        if link is None:
            # Consumers exist (here, or on routers the mesh cannot reach this instant): the
            # message waits for credit or for the mesh to reconverge, within the sender's window.
            undelivered.append(message)
            if address.remote and address not in self.waiting_for_mesh:
                self.waiting_for_mesh[address] = time.monotonic()
            return None
        self._deliver(link, message, address)
        return link

    def inject(self, payload: bytes, address_key: str | None, origin: CoreLink) -> bool:
        """Send a message made inside the router (a management reply) to ``address_key``,
        pre-settled. False when there is nowhere to send it."""
        address = self.table.find(address_key) if address_key else None
        if address is not None and address.handler is not None:
            return False
        if address is None and topological_router(address_key or "") is None and (
                not address_key or self._alias(address_key) is None):
            return False
        if address is not None:
            address.counters.deliveries_from_container += 1
        self.route(InFlight(payload, payload, origin, None, True), address_key)
        return True

    def _deliver(self, link: CoreLink, message: InFlight, address: Address | None) -> None:
        """Send ``message`` on as it came (settled or not), and account for its producer's
        credit: a pre-settled message has left the router, so its credit comes back now; an
        unsettled one holds it until its outcome reaches the producer (settled_upstream). A
        producer thus has at most its window (linkCapacity) of unsettled messages anywhere
        in the router, as in qdrouterd, however slowly its consumers settle. Like qdrouterd,
        links from other routers and edge routers get their credit back at once, unsettled
        or not: many addresses share such a link, and each producer is bounded at the
        router it is attached to."""
        self.send(link, message, message.settled, address)
        in_link = message.in_link
        if message.settled or in_link.kind != ENDPOINT or in_link.via_edge:
            self.release_credit(in_link)
        else:
            message.credit_held = True

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
        # Credit comes back only if the address can still take messages: a sender to an
        # address nobody consumes is held (no credit), one whose route merely flickered
        # (a mesh reconverging) keeps flowing.
        self.release_credit(in_link)


_UNSET = object()


def _remove(links: List[CoreLink], link: CoreLink) -> None:
    try:
        links.remove(link)
    except ValueError:
        pass
