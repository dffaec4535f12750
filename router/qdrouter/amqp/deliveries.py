"""The data path: messages in from producers, out to consumers, and outcomes back.

Hot path. Proton is driven through cffi with pointers as dict keys; no proton Python
classes, and no more parsing of a message than routing needs.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Set

from ..core.address_table import MULTICAST, UNAVAILABLE, AddressTable
from ..core.forwarder import Forwarder
from ..core.links import CONTROL, DATA, ENDPOINT, CoreLink, InFlight
from ..core.outcomes import ACCEPTED, MODIFIED
from .consumer_flow import ConsumerFlow
from .credit_return import CreditReturn
from .dispositions import copy_disposition, count_outcome, disposition_handler
from .inbound import annotated, inspect, stripped
from .local_multicast import local_multicast
from .mesh_handoff import mesh_handoff
from .message_reading import MessageReading
from .message_sections import MessageFormatError
from .outbound import OutboundLimits
from .proton_ffi import ffi, lib
from .proton_shim import (
    ON_PYPY,
    QD_EMPTY,
    QD_LARGE,
    QD_NO_ANNOTATIONS,
    QD_PARTIAL,
    QD_TAKEN_SETTLED,
    delivery_of,
    take,
)
from .radius_rule import released_beyond_radius
from .send_queue import sends_flusher
from .streaming import Streams
from .waiting_producers import WaitingProducers

_QD_PREFIX = b"x-opt-qd."
# The fast path reads messages of up to this many bytes.
_FAST_READ = 64 * 1024
# How most messages without a message-annotations section begin: properties first,
# after an empty header (list0, as proton clients encode a default one) or none. Router
# annotations live only in a message-annotations section, which would come before them.
_PLAIN_HEAD_AFTER_HEADER = b"\x00SpE\x00Ss"
_PLAIN_HEAD = b"\x00Ss"

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
        # Link-routed links are not the core's: their deliveries pass straight through.
        self.link_router: Any = None
        # Routing-protocol messages arriving on inter-router control links.
        self.control_handler: Callable[[CoreLink, bytes], None] | None = None
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
        self._arena = bytearray(1024 * 1024)
        self.arena_used = 0
        # Bounds on output queued toward each connection (amqp/outbound.py): made before
        # the flusher, which counts what it sends.
        self.outbound = OutboundLimits(self.resume_consumer, self.flush_now, self.forwarder.consumer_blocked,
                                       unblocked=self.connection_unblocked)
        self.flush_pending = sends_flusher(self)
        self._handoff = mesh_handoff(self)
        # Policy: producer links whose messages need a look (size limit or user-id check),
        # by proton pointer. Empty unless policy sets such a limit, so the fast path pays
        # one truth test per message.
        self.policed: Dict[Any, Any] = {}
        self.policer: Any = None
        self.on_link_refused: Callable[[CoreLink], None] | None = None
        self.waiting = WaitingProducers(self)
        # Large messages, streamed as they arrive (amqp/streaming.py).
        self.streams = Streams(self)
        self.forwarder.on_routes_changed = self.waiting.resume
        # The delivery handler once made (delivery_handler): waiting producers are read
        # through it.
        self.on_delivery: Callable[[Any, Any, Any], None] = _no_handler

    # ---- events ------------------------------------------------------------------------
    def delivery_handler(self) -> Callable[[Any, Any, Any], None]:
        """The PN_DELIVERY handler for deliveries not in ``self.outgoing`` (the event loop
        gives those to ``self.consumer_disposition``). A closure over local names, because
        at hundreds of thousands of calls a second attribute and global lookups are a real
        share of the cost. The common case (addressed link, complete message without router
        annotations, an anycast consumer with credit) is handled inline; everything else
        goes through the general methods below."""
        links_get = self.links.get
        readable = lib.pn_delivery_readable
        is_settled = lib.pn_delivery_settled
        settle = lib.pn_delivery_settle
        forwarder = self.forwarder
        forward = forwarder.forward
        credit_dirty_append = forwarder.credit_dirty.append
        general_receive = self.receive
        producer_settled = self.producer_settled
        qd_prefix = _QD_PREFIX
        pending_append = self.pending_sends.append
        multicast = MULTICAST
        unavailable = UNAVAILABLE
        policed = self.policed
        state = self
        fast_pointer = ffi.from_buffer(self._arena)
        fast_bytes = ffi.buffer(fast_pointer)
        in_arena = ON_PYPY
        arena_limit = len(self._arena) - _FAST_READ
        no_annotations = QD_NO_ANNOTATIONS
        taken_settled = QD_TAKEN_SETTLED
        flush_pending = self.flush_pending
        return_credit_now = self.return_credit_now
        multicast_here = local_multicast(self)
        plain_head_after_header = _PLAIN_HEAD_AFTER_HEADER
        plain_head = _PLAIN_HEAD
        wait = self.waiting.wait
        # Stands for the consumer when there is none: it has credit, so the one test of
        # whether a message must wait is a test of the consumer's credit.
        nobody = CoreLink(0, "", False, None, None, None)
        nobody.credit = 1
        endpoint = ENDPOINT
        waiting_event = self.waiting.on_event
        streaming = self.streams.by_link
        stream_event = self.streams.on_event
        start_stream = self.streams.start
        stream_update = self.streams.consumer_update

        def on_delivery(delivery: Any, link_key: Any, key: Any) -> None:
            link = links_get(link_key)
            if link is None:
                if state.link_router is not None:
                    state.link_router.on_delivery(delivery)
                return
            if not link.read_on_arrival:
                if link.incoming:
                    (stream_event if link in streaming else waiting_event)(link, delivery, key)
                elif stream_update(delivery, key):
                    pass  # an update of a streamed message's delivery (amqp/streaming.py)
                elif is_settled(delivery):
                    # An outgoing delivery the router no longer tracks (settled already).
                    settle(delivery)
                return
            raw = None
            address = link.address
            if address is not None and address.consumers:
                distribution = address.distribution
                consumers = address.consumers
                out = consumers[0]
            else:
                # "unavailable" also when nobody consumes here: the general path decides then.
                distribution = unavailable
                out = nobody
            if policed and link.handle in policed:
                if key in link.unsettled:
                    # An update of a message already read (the producer settled first):
                    # nothing for policy to read.
                    if is_settled(delivery):
                        producer_settled(link, delivery, key)
                    return
                # Policy reads the message (size, user-id); what passes takes the paths below.
                if lib.pn_delivery_partial(delivery) and start_stream(
                        link, delivery, key, state.policer.held(link.handle)):
                    return
                raw = state.policer.message(link, delivery)
                if raw is None:
                    return
                read_here = False  # policy read it, and advanced the link
                settled_here = False
                plain = raw.startswith(plain_head_after_header) or raw.startswith(plain_head)
                start = count = 0
            else:
                if out.credit <= 0 and (distribution is not multicast and len(consumers) == 1
                                        and not address.remote):
                    # Its one consumer has no credit: the message waits, unread, in proton
                    # (amqp/waiting_producers.py), and with it every later one on the link.
                    wait(link, address)
                    return
                # Bytes are buffered only in the link's current delivery: every complete
                # message is read and the link advanced as its event is handled (or its
                # link waits), so a delivery with bytes pending is the current one (take
                # reads the link's).
                if in_arena:
                    start = state.arena_used
                    if start > arena_limit:
                        flush_pending()  # sends what the arena holds, and empties it
                        start = 0
                    count = take(link.handle, delivery, fast_pointer + start, _FAST_READ)
                else:
                    start = 0
                    count = take(link.handle, delivery, fast_pointer, _FAST_READ)
                if count < 0:
                    if count == QD_EMPTY:
                        # Nothing buffered: an update of a delivery already read (the producer
                        # settled first), or an empty or aborted message (current on its link).
                        if readable(delivery):
                            general_receive(link, delivery, key)
                        elif is_settled(delivery):
                            producer_settled(link, delivery, key)
                    elif count == QD_LARGE:
                        general_receive(link, delivery, key)
                    elif count == QD_PARTIAL:
                        # More to come: streamed once large enough (amqp/streaming.py), else
                        # read once whole. (Settled by its producer, it is not settled here:
                        # that would discard the rest of it.)
                        start_stream(link, delivery, key)
                    # QD_ABORTED: the producer gave up on it; read past, and settled.
                    return
                # The shim settles a message its producer settled (so every path after this
                # may settle it again, harmlessly), and tells one that starts without
                # message annotations, so without router annotations: most do, and they need
                # no search for them.
                settled_here = count >= taken_settled
                if settled_here:
                    count -= taken_settled
                plain = count >= no_annotations
                if plain:
                    count -= no_annotations
                    # (in the arena, its bytes are made only where they must outlive the send)
                    if not in_arena:
                        raw = fast_bytes[0:count]
                else:
                    raw = fast_bytes[start:start + count]
                read_here = True
            if distribution is unavailable or (
                distribution is multicast and (address.remote or not read_here)
            ):
                if raw is None:
                    raw = fast_bytes[start:start + count]
                general_receive(link, delivery, key, raw)
                return
            link.counters.delivered += 1
            # Any other start is searched for the router's annotation prefix (bytes.find is
            # twice as fast as "in" here); such a message was made into bytes.
            if not plain and raw is not None and raw.find(qd_prefix) >= 0:
                general_receive(link, delivery, key, raw)
                return
            presettled = settled_here or link.sends_settled
            if presettled is None:
                presettled = is_settled(delivery)
            if presettled:
                if not settled_here:
                    settle(delivery)
                message = None
            else:
                if raw is None:
                    raw = fast_bytes[start:start + count]
                message = InFlight(raw, raw, link, delivery, False, key)
                link.unsettled[key] = message
            if raw is None:
                # Pre-settled, in the arena: sent from there, so it stays until flush_sends.
                payload = fast_pointer[start:start + count]
                state.arena_used = start + count
            else:
                payload = raw
            if distribution is multicast and message is None and multicast_here(link, address, payload):
                if link.owed_credit * 2 >= link.capacity:
                    return_credit_now(link)
                return
            if distribution is multicast or len(consumers) > 1 or out.credit <= 0 or not out.strip_out:
                if message is None:
                    if raw is None:
                        raw = fast_bytes[start:start + count]
                    message = InFlight(raw, raw, link, None, True)
                forward(message, address)
                if link.owed_credit * 2 >= link.capacity:
                    return_credit_now(link)
                return
            # Inline anycast decision: the same steps as Forwarder._send, with the proton
            # send deferred to flush_sends like every other send.
            out.credit -= 1
            counters = out.counters
            counters.delivered += 1
            address_counters = address.counters
            address_counters.deliveries_ingress += 1
            address_counters.deliveries_egress += 1
            pending_append((out, payload, message))
            if message is not None and link.kind is endpoint and not link.via_edge:
                # Unsettled from a client: its credit comes back with its outcome
                # (Forwarder._deliver says why).
                out.outstanding += 1
                message.credit_held = True
                link.credit -= 1
                return
            # Pre-settled (or from another router): its credit comes straight back, the
            # message has left the router.
            if message is None:
                counters.presettled += 1
            else:
                out.outstanding += 1
            link.owed_credit += 1
            if not link.credit_queued:
                link.credit_queued = True
                credit_dirty_append(link)
            if link.owed_credit * 2 >= link.capacity:
                return_credit_now(link)

        self.on_delivery = on_delivery
        return on_delivery

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
            if self.control_handler is not None:
                self.control_handler(link, raw)
            self.forwarder._release_credit(link)
            if not message.settled:
                self.finish_incoming(message, ACCEPTED)
            return
        # bytes.find, not "in": "in" first tries the argument as an int, and raises and
        # clears a TypeError per message doing so.
        self.route_message(link, message, raw.find(_QD_PREFIX) >= 0)

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
                    return  # a mesh hop with one obvious next step (amqp/mesh_handoff.py)
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
