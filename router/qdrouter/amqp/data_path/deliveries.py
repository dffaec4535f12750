"""The data path: messages in from producers, out to consumers, and outcomes back.

Hot path. Proton is driven through cffi with pointers as dict keys; no proton Python
classes, and no more parsing of a message than routing needs.
"""

from __future__ import annotations

from typing import Any, Dict, Set

from ...core.address_table import AddressTable
from ...core.forwarder import Forwarder
from ...core.links import CONTROL, DATA, ENDPOINT, CoreLink, InFlight
from ...core.outcomes import ACCEPTED, MODIFIED
from ..bindings.proton_ffi import ffi, lib
from ..bindings.proton_shim import delivery_of
from ..codec.message_sections import MessageFormatError
from .consumer_flow import ConsumerFlow
from .credit_return import CreditReturn
from .dispositions import copy_disposition, count_outcome, disposition_handler
from .fast_path import QD_PREFIX, DeliveryHandler, delivery_handler
from .inbound import annotated, inspect, stripped
from .mesh_handoff import mesh_handoff
from .message_reading import MessageReading
from .outbound import OutboundLimits
from .radius_rule import released_beyond_radius
from .reference_path import reference_asked, reference_handler
from .seams import UNPOLICED, ControlReceiver, MessagePolicing, RoutedLinks
from .send_queue import sends_flusher
from .streaming import Streams
from .waiting_producers import WaitingProducers

# copy_disposition: link routing copies outcomes the same way.
__all__ = ["DeliveryAdaptor", "copy_disposition"]


class DeliveryAdaptor(CreditReturn, ConsumerFlow, MessageReading):
    """Implements the core's DeliveryIO over proton, and feeds it arriving messages."""

    def __init__(self, router_id: str, table: AddressTable) -> None:
        self.router_id = router_id
        # How router annotations name this router (area 0, as qdrouterd).
        self.node = f"0/{router_id}"
        # An edge router (qdrouter/edge/): what it sends its interior carries no ingress/trace.
        self.edge_router = False
        # Link-routed links are not the core's: their deliveries pass straight through
        # (route_links_with).
        self.link_router: RoutedLinks | None = None
        # Who reads routing-protocol messages arriving on inter-router control links: the
        # mesh (receive_control_with).
        self._control: ControlReceiver | None = None
        self.table = table
        self.forwarder = Forwarder(table, self)
        # By proton_shim.pointer_key of their handle: the key the event loop gives the hot
        # path with each delivery.
        self.links: Dict[Any, CoreLink] = {}
        # Connections with output to flush at the end of this loop turn.
        self.dirty: Set[Any] = set()
        # (consumer link, payload, InFlight or None when pre-settled), in decision order.
        self.pending_sends: list[tuple[CoreLink, bytes, InFlight | None]] = []
        # (message, outcome) to give to producers' deliveries, settling them.
        self.pending_outcomes: list[tuple[InFlight, int]] = []
        # Unsettled outgoing deliveries of all links, by delivery_key (each link's
        # ``unsettled`` holds its own too). A consumer's disposition is found here without
        # asking proton which link the delivery is on; entries leave as the deliveries are
        # settled or their link goes (drop_outgoing), before proton may reuse the pointer.
        self.outgoing: Dict[Any, InFlight] = {}
        self.consumer_disposition = disposition_handler(self.outgoing, self.dirty, self.pending_outcomes)
        self._buffer = bytearray(1024 * 1024)
        self._pointer = ffi.from_buffer(self._buffer)
        # Slicing a cffi buffer makes bytes in one step: cheaper than a memoryview's slice and
        # tobytes() (56 against 85 ns on CPython, 5 against 14 on PyPy).
        self._bytes = ffi.buffer(self._pointer)
        # The fast path's own buffer. On PyPy it is an arena: a pre-settled message without
        # router annotations stays where it was read until flush_sends has sent it (which
        # empties the arena), and the send takes it from there. Made into bytes, it would be
        # copied once into them and once more out of them for every send (PyPy hands C a
        # copy of a bytes object: it may move), about 200 instructions per message.
        self.arena = bytearray(1024 * 1024)
        self.arena_used = 0
        # Bounds on output queued toward each connection (amqp/data_path/outbound.py): made before
        # the flusher, which counts what it sends.
        self.outbound = OutboundLimits(self.resume_consumer, self.flush_now, self.forwarder.consumer_blocked,
                                       unblocked=self.connection_unblocked)
        self.flush_pending = sends_flusher(self)
        self._handoff = mesh_handoff(self)
        # Policy: producer links whose messages need a look (size limit or user-id check),
        # by proton pointer. Empty unless policy sets such a limit, so the fast path pays
        # one truth test per message.
        self.policed: Dict[Any, Any] = {}
        self.policer: MessagePolicing = UNPOLICED
        self.waiting = WaitingProducers(self)
        # Large messages, streamed as they arrive (amqp/data_path/streaming.py).
        self.streams = Streams(self)
        self.forwarder.add_address_listener(self.waiting)
        # The delivery handler once made (delivery_handler): waiting producers are read
        # through it.
        self.on_delivery: DeliveryHandler = _no_handler

    # ---- the parts beside the data path (amqp/data_path/seams.py) ----------------------
    def route_links_with(self, link_router: RoutedLinks) -> None:
        """Deliveries on links the core does not know go to ``link_router`` (one per router)."""
        if self.link_router is not None:
            raise ValueError("the adaptor already has a link router")
        self.link_router = link_router

    def police_with(self, policer: MessagePolicing) -> None:
        """Messages on links in ``policed`` are checked by ``policer`` (one per router)."""
        if self.policer is not UNPOLICED:
            raise ValueError("the adaptor already has a policer")
        self.policer = policer

    def receive_control_with(self, receiver: ControlReceiver | None) -> ControlReceiver | None:
        """Control messages go to ``receiver`` from now on; returns the one before it (a
        test hook puts it back after a trip)."""
        previous, self._control = self._control, receiver
        return previous

    # ---- events ------------------------------------------------------------------------
    def delivery_handler(self) -> DeliveryHandler:
        """The PN_DELIVERY handler for deliveries not in ``self.outgoing`` (the event loop
        gives those to ``self.consumer_disposition``): amqp/data_path/fast_path.py."""
        make = reference_handler if reference_asked() else delivery_handler
        self.on_delivery = make(self)
        return self.on_delivery

    def receive(self, link: CoreLink, delivery: Any, key: Any, raw: bytes | None = None) -> None:
        """Any complete incoming message; ``raw`` when the fast path already read it."""
        self._receive_one(link, delivery, key, raw)
        if link.owed_credit * 2 >= link.capacity:
            self.return_credit_now(link)

    def _receive_one(self, link: CoreLink, delivery: Any, key: Any, raw: bytes | None) -> None:
        handle = link.handle
        if raw is None:
            if lib.pn_delivery_aborted(delivery):
                lib.pn_link_advance(handle)
                lib.pn_delivery_settle(delivery)
                return
            raw = self._recv(handle, lib.pn_delivery_pending(delivery))
            lib.pn_link_advance(handle)
        link.counters.delivered += 1
        if lib.pn_delivery_settled(delivery):
            lib.pn_delivery_settle(delivery)
            message = InFlight(raw, raw, link, None, True)
        else:
            message = InFlight(raw, raw, link, delivery, False, key)
            link.unsettled[key] = message
        if link.kind == CONTROL:
            if self._control is not None:
                self._control.control_message(link, raw)
            self.forwarder.release_credit(link)
            if not message.settled:
                self.finish_incoming(message, ACCEPTED)
            return
        # bytes.find, not "in": "in" first tries the argument as an int, and raises and
        # clears a TypeError per message doing so.
        self.route_message(link, message, raw.find(QD_PREFIX) >= 0)

    def route_message(self, link: CoreLink, message: InFlight, annotations: bool,
                      handoff: bool = True) -> None:
        """Route a message read from ``link`` (its router annotations read first when it has
        any, or the link is anonymous); ``handoff``: may take the mesh's short cut."""
        if link.anonymous or annotations:
            try:
                address_key = inspect(link, message)
            except MessageFormatError as error:
                self._reject_malformed(message, str(error))
                return
            if message.trace and released_beyond_radius(self, message):
                return
            if link.anonymous:
                if address_key and link.kind == ENDPOINT:
                    address_key = self.table.ingress_key(address_key)
                elif address_key and link.kind == DATA and handoff and self._handoff(message, address_key):
                    return  # a mesh hop with one obvious next step (amqp/data_path/mesh_handoff.py)
                self.forwarder.route(message, address_key)
                return
        self.forwarder.forward(message, link.address)

    def producer_settled(self, link: CoreLink, delivery: Any, key: Any) -> None:
        """The producer settled first (it no longer cares): settle downstream too."""
        message = link.unsettled.pop(key, None)
        lib.pn_delivery_settle(delivery)
        if message is None:
            return
        message.delivery = None
        self.forwarder.settled_upstream(message)
        out_link = message.out_link
        out_key = message.out_key
        if out_link is not None and out_key is not None:
            if out_link.unsettled.pop(out_key, None) is not None:
                del self.outgoing[out_key]
                self.forwarder.consumer_settled(out_link)
                lib.pn_delivery_settle(delivery_of(out_key))
                self.dirty.add(out_link.connection)
            message.out_key = None

    # ---- DeliveryIO --------------------------------------------------------------------
    def transmit(self, link: CoreLink, message: InFlight, presettled: bool) -> None:
        if message.streamed or link in self.streams.sending:  # (a link carrying a stream waits)
            self.streams.transmit(link, message, presettled)
            return
        if link.strip_out:
            payload = message.payload
            if payload is None:
                payload = stripped(message)
        else:
            payload = annotated(message, link, self.node, self.edge_router)
        self.pending_sends.append((link, payload, None if presettled else message))

    def finish_incoming(self, message: InFlight, outcome: int) -> None:
        if message.streamed and self.streams.defer(message, outcome):
            return  # given when its last byte has arrived
        delivery = message.delivery
        if delivery is None:
            return
        message.delivery = None
        in_link = message.in_link
        in_link.unsettled.pop(message.delivery_key, None)
        if outcome == MODIFIED:
            lib.pn_disposition_set_failed(lib.pn_delivery_local(delivery), True)
        lib.pn_delivery_update(delivery, outcome)
        lib.pn_delivery_settle(delivery)
        count_outcome(in_link, outcome)
        self.dirty.add(in_link.connection)
        if message.credit_held:
            self.forwarder.settled_upstream(message)


def _no_handler(delivery: Any, link_key: Any, key: Any) -> None:
    raise RuntimeError("delivery_handler() was not called")
