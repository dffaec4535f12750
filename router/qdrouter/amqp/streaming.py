"""Large messages streamed through the router (cut-through), with a bound per delivery.

A message is read whole before it is routed, as long as it is small: the fast path takes
it in one step (amqp/deliveries.py). One still arriving with ``STREAM_START`` bytes or more
buffered is *streamed* instead: its head (header, annotations and properties: what routing
reads) is collected, the message is routed like any other, and from then on each chunk
read from the producer's delivery is written at once to the outgoing delivery (or
deliveries: a multicast's copies, and the links toward other routers). Nothing of it is
kept but the head.

Hold-off: when a consumer's connection stops taking output (its queued output passes the
per-connection limit, amqp/outbound.py), the stream stops reading the producer's delivery
and the router stops reading the producer connection's socket, until that output has
drained below half the limit. qdrouterd's Q2 hold-off does the same per message
(QD_QLIMIT_Q2_UPPER / _LOWER in src/message.c); stopping the socket as well bounds what
proton buffers for the producer whatever its session window. So a message in flight costs
the router its head, one chunk, and what the consumer's connection may queue, whatever its
size (docs/routing.md, "Memory ceilings").

Outcomes: the producer hears the consumer's outcome only after its last byte has arrived,
as with qdrouterd (a delivery settled while still arriving would lose the rest of it).
The outgoing delivery joins the router's normal tracking (``DeliveryAdaptor.outgoing``) at
that point; an update before then is kept here. A consumer that settles early, or leaves,
stops the stream: the rest of the message is read and dropped, and the producer gets that
outcome (or modified, delivery-failed, for a consumer that left) at the end.

maxMessageSize (policy) is counted as the bytes arrive: past it, the outgoing deliveries
are aborted and the producer is refused as amqp/policing_messages.py refuses any oversized
message.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any, Dict, List

from ..core.links import CONTROL, CoreLink, InFlight
from ..core.outcomes import ACCEPTED, MODIFIED
from .dispositions import copy_disposition
from .inbound import annotated, stripped
from .message_sections import MessageFormatError, find_sections, read_to
from .proton_ffi import ffi, lib
from .proton_shim import delivery_key, pointer_key

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor

# A delivery still arriving with this many bytes buffered is streamed (the fast path reads
# complete messages of up to 64 KiB; the general path reads larger complete ones whole).
STREAM_START = 256 * 1024
# The most of a message's head (header to properties) collected before it is routed; a
# head larger than this is refused as malformed (amqp:decode-error).
HEAD_LIMIT = 1024 * 1024
# Bytes moved from the producer's delivery to the consumers' per read.
CHUNK = 64 * 1024
# A producer held back this long has its socket read once more (its heartbeats), as long
# as proton holds less than KEEPALIVE_LIMIT of its message.
KEEPALIVE_S = 4.0
KEEPALIVE_LIMIT = 4 * 1024 * 1024


class StreamedMessage(InFlight):
    """The InFlight of a streamed message: ``raw`` and ``payload`` hold its head only."""

    __slots__ = ("stream",)
    streamed = True

    def __init__(self, in_link: CoreLink, settled: bool, stream: Stream) -> None:
        super().__init__(b"", b"", in_link, None, settled)
        self.stream = stream


class _Out:
    """One outgoing delivery of a stream."""

    __slots__ = ("delivery", "key", "link", "tracked")

    def __init__(self, link: CoreLink, delivery: Any, tracked: bool) -> None:
        self.link = link
        self.delivery = delivery
        self.key = delivery_key(delivery)
        # Unsettled (its consumer's outcome goes to the producer), not a pre-settled copy.
        self.tracked = tracked


class Stream:
    """One incoming delivery being streamed."""

    __slots__ = ("body_sent", "delivery", "discard", "head", "held", "held_since", "in_link", "key", "limit",
                 "message", "outcome", "outs", "pumping", "received", "routed")

    def __init__(self, in_link: CoreLink, delivery: Any, key: Any, limit: int) -> None:
        self.in_link = in_link
        self.delivery = delivery
        self.key = key
        # The head collected so far; None once routed.
        self.head: bytearray | None = bytearray()
        self.routed = False
        self.body_sent = False
        self.outs: List[_Out] = []
        self.received = 0
        # maxMessageSize of the producer's policy (0: none).
        self.limit = limit
        # The producer's outcome once decided before the end (no route, early settlement,
        # the consumer gone): the rest of the message is read and dropped.
        self.outcome: int | None = None
        self.discard = False
        self.held = False
        self.held_since = 0.0
        self.pumping = False
        settled = bool(lib.pn_delivery_settled(delivery))
        self.message: StreamedMessage = StreamedMessage(in_link, settled, self)


class Streams:
    """The streams of one router's data path (one DeliveryAdaptor)."""

    def __init__(self, adaptor: DeliveryAdaptor) -> None:
        self.adaptor = adaptor
        # Incoming links with a delivery being streamed: the delivery handler sends their
        # events here (their ``read_on_arrival`` is cleared meanwhile).
        self.by_link: Dict[CoreLink, Stream] = {}
        # Outgoing links carrying a stream: they take nothing else until it ends.
        self.sending: Dict[CoreLink, Stream] = {}
        # Unsettled outgoing deliveries of streams still arriving, by delivery_key.
        self.out_deliveries: Dict[Any, Stream] = {}
        self._buffer = bytearray(CHUNK)
        self._pointer = ffi.from_buffer(self._buffer)
        self._bytes = ffi.buffer(self._pointer)
        self._tags = itertools.count(1)
        # Messages streamed (for management and the tests' view of the router).
        self.started = 0

    # ---- from the delivery handler -------------------------------------------------------
    def start(self, link: CoreLink, delivery: Any, key: Any, held: bytes | None = None) -> bool:
        """A delivery still arriving: streamed from now on if it is large enough (True)."""
        buffered = lib.pn_delivery_pending(delivery) + (len(held) if held else 0)
        if link.kind == CONTROL or buffered < STREAM_START or link.handle is None:
            return False
        grant = self.adaptor.policed.get(link.handle) if self.adaptor.policed else None
        stream = Stream(link, delivery, key, grant.max_message_size if grant is not None else 0)
        if held:
            stream.head += held  # type: ignore[operator]
            stream.received = len(held)
            self.adaptor.policer.forget(link.handle)
        link.read_on_arrival = False
        self.by_link[link] = stream
        link.counters.delivered += 1
        self.started += 1
        self._pump(stream)
        return True

    def on_event(self, link: CoreLink, delivery: Any, key: Any) -> None:
        """A delivery event on a link whose current delivery is streamed."""
        stream = self.by_link.get(link)
        if stream is not None and key == stream.key:
            self._pump(stream)
        elif key in link.unsettled and lib.pn_delivery_settled(delivery):
            # A message read before this one, settled by its producer now.
            self.adaptor.producer_settled(link, delivery, key)
        # (a later delivery on the link is read once the stream ends)

    def consumer_update(self, delivery: Any, key: Any) -> bool:
        """A consumer's update of a stream's outgoing delivery (False: not one)."""
        stream = self.out_deliveries.get(key)
        if stream is None:
            return False
        if not lib.pn_delivery_settled(delivery):
            return True  # non-terminal: the outcome comes with settlement
        del self.out_deliveries[key]
        state = int(lib.pn_delivery_remote_state(delivery))
        if state and state != ACCEPTED:
            copy_disposition(delivery, stream.delivery, state)
        self._drop_out(stream, key, state or MODIFIED)
        return True

    # ---- from the forwarder (DeliveryIO) -----------------------------------------------
    def transmit(self, link: CoreLink, message: StreamedMessage, presettled: bool) -> None:
        """The forwarder sends a streamed message on ``link``: its delivery starts with the
        head; the rest follows as it arrives."""
        stream = message.stream
        if stream.body_sent or stream.discard or link.handle is None:
            # Too late to join (a multicast copy that waited for credit): the body has gone.
            link.counters.dropped_presettled += 1
            return
        adaptor = self.adaptor
        adaptor.flush_pending()  # what was decided for this link before goes first
        if link.strip_out:
            payload = stripped(message)
        else:
            payload = annotated(message, link, adaptor.node, adaptor.edge_router)
        tag = b"S" + next(self._tags).to_bytes(8, "little")
        delivery = lib.pn_delivery(link.handle, ffi.new("pn_bytes_t *", (len(tag), ffi.from_buffer(tag)))[0])
        out = _Out(link, delivery, not presettled)
        lib.pn_link_send(link.handle, payload, len(payload))
        adaptor.outbound.account(link.connection, len(payload))
        adaptor.dirty.add(link.connection)
        stream.outs.append(out)
        if out.tracked:
            self.out_deliveries[out.key] = stream
        self.sending[link] = stream
        link.credit = 0  # a link carries one message at a time
        if not stream.pumping:
            self._pump(stream)

    def defer(self, message: InFlight, outcome: int) -> bool:
        """The forwarder gives a streamed message its outcome: kept for the end when it is
        still arriving (True)."""
        stream: Stream = message.stream  # type: ignore[attr-defined]
        if stream.in_link not in self.by_link or self.by_link[stream.in_link] is not stream:
            return False
        stream.outcome = outcome
        if not any(out.tracked for out in stream.outs):
            # Nowhere to go (no route, released after waiting): the rest is dropped.
            stream.discard = True
            if not stream.pumping:
                self._pump(stream)
        return True

    # ---- from consumer flow and link lifecycle ---------------------------------------------
    def busy(self, link: CoreLink) -> bool:
        """``link`` carries a stream: it takes no other message, nor credit, until it ends."""
        return link in self.sending

    def resumed(self, link: CoreLink) -> bool:
        """``link``'s connection takes output again: its stream goes on (True if it has one)."""
        stream = self.sending.get(link)
        if stream is None:
            return False
        link.credit = 0
        if not stream.pumping:
            self._pump(stream)
        return True

    def consumer_gone(self, link: CoreLink) -> None:
        stream = self.sending.pop(link, None)
        if stream is None:
            return
        for out in list(stream.outs):
            if out.link is link:
                self.out_deliveries.pop(out.key, None)
                self._drop_out(stream, out.key, MODIFIED, abort=False)

    def producer_gone(self, link: CoreLink) -> None:
        """The producer's link is going: what proton has of a complete message still goes
        on; one cut short is aborted toward its consumers."""
        stream = self.by_link.get(link)
        if stream is None:
            return
        if link.handle is not None and not lib.pn_delivery_partial(stream.delivery):
            self._pump(stream, drain=True)
        if self.by_link.get(link) is stream:
            self._abort(stream)

    # ---- the stream --------------------------------------------------------------------
    def _pump(self, stream: Stream, drain: bool = False) -> None:
        """Move what the producer's delivery has to the consumers, as far as they take it."""
        stream.pumping = True
        try:
            self._move(stream, drain)
        finally:
            stream.pumping = False

    def _move(self, stream: Stream, drain: bool) -> None:
        handle = stream.in_link.handle
        delivery = stream.delivery
        pointer = self._pointer
        recv = lib.pn_link_recv
        send = lib.pn_link_send
        account = self.adaptor.outbound.account
        while True:
            if not drain and not stream.discard and stream.routed and (
                    not stream.outs or any(out.link.connection.out_blocked for out in stream.outs)):
                self._hold(stream)  # nobody to send to yet, or a consumer's output is full
                return
            count = recv(handle, pointer, CHUNK)
            if count <= 0:
                if count == 0:
                    break  # more to come
                if lib.pn_delivery_aborted(delivery):
                    self._abort(stream)
                else:
                    self._complete(stream)
                return
            stream.received += count
            if stream.limit and stream.received > stream.limit:
                self._oversize(stream)
                return
            if stream.discard:
                continue
            if not stream.routed:
                stream.head += self._bytes[0:count]
                self._route(stream)
                if stream.in_link not in self.by_link:
                    return
                continue
            stream.body_sent = True
            for out in stream.outs:
                send(out.link.handle, pointer, count)
                account(out.link.connection, count)
            for out in stream.outs:
                self.adaptor.dirty.add(out.link.connection)
        self._unhold(stream)

    def _route(self, stream: Stream) -> None:
        """Route the message once its head is in (or refuse it, if it cannot be read)."""
        head = stream.head
        assert head is not None
        try:
            complete = head_complete(head)
        except MessageFormatError:
            complete = True  # malformed: routing refuses it
        if not complete and len(head) < HEAD_LIMIT:
            return
        message = stream.message
        message.raw = message.payload = bytes(head)
        stream.head = None
        stream.routed = True
        self.adaptor.route_message(stream.in_link, message, True, False)

    def tick(self, now: float) -> None:
        """Producers held back for a while have their socket read once more (heartbeats
        must arrive, or the idle timeout would close the connection), while what proton
        holds of their message stays under ``KEEPALIVE_LIMIT``."""
        for stream in list(self.by_link.values()):
            if stream.held and now - stream.held_since > KEEPALIVE_S and (
                    lib.pn_delivery_pending(stream.delivery) < KEEPALIVE_LIMIT):
                self._unhold(stream)

    def _hold(self, stream: Stream) -> None:
        if stream.held:
            return
        link = stream.in_link
        if lib.pn_session_get_incoming_capacity(lib.pn_link_session(link.handle)) > 0:
            return  # a bounded session window (maxSessionFrames) holds the producer back
        stream.held = True
        stream.held_since = time.monotonic()
        link.connection.input_held += 1

    def _unhold(self, stream: Stream) -> None:
        if stream.held:
            stream.held = False
            connection = stream.in_link.connection
            connection.input_held -= 1
            self.adaptor.dirty.add(connection)

    def _drop_out(self, stream: Stream, key: Any, outcome: int, abort: bool = True) -> None:
        """One outgoing delivery stops (its consumer settled early, or left)."""
        for out in list(stream.outs):
            if out.key == key:
                stream.outs.remove(out)
                if abort:
                    lib.pn_delivery_abort(out.delivery)
                    self.adaptor.dirty.add(out.link.connection)
                if self.sending.get(out.link) is stream:
                    del self.sending[out.link]
                    self._free(out.link)
                out.link.outstanding -= 1 if out.tracked else 0
                if out.tracked:
                    stream.outcome = outcome
        if not stream.outs and stream.in_link in self.by_link:
            stream.discard = True
            if not stream.pumping:
                self._pump(stream)

    def _free(self, link: CoreLink) -> None:
        """``link`` carried its stream's last byte (or no longer carries it): its credit
        and what waited for it move again."""
        if link.handle is not None:
            self.adaptor.resume_consumer(link)

    def _end(self, stream: Stream) -> None:
        """The incoming delivery is done with: its link is read again from the next one."""
        link = stream.in_link
        if self.by_link.get(link) is stream:
            del self.by_link[link]
        self._unhold(stream)
        stream.message.raw = stream.message.payload = b""
        link.read_on_arrival = True
        handle = link.handle
        if handle is None:
            return
        on_delivery = self.adaptor.on_delivery
        link_key = pointer_key(handle)
        while link.read_on_arrival:
            delivery = lib.pn_link_current(handle)
            if delivery == ffi.NULL:
                return
            on_delivery(delivery, link_key, delivery_key(delivery))
            if lib.pn_link_current(handle) == delivery:
                return

    def _complete(self, stream: Stream) -> None:
        """The producer's last byte has arrived and gone on."""
        link = stream.in_link
        delivery = stream.delivery
        lib.pn_link_advance(link.handle)
        adaptor = self.adaptor
        message = stream.message
        if not stream.routed and stream.head is not None:
            # The whole message fitted in its head collection (it ended early): route it now.
            message.raw = message.payload = bytes(stream.head)
            stream.head = None
            stream.routed = True
            stream.pumping = True
            adaptor.route_message(link, message, True, False)
            stream.pumping = False
            for out in stream.outs:
                adaptor.dirty.add(out.link.connection)
        for out in stream.outs:
            lib.pn_link_advance(out.link.handle)
            if not out.tracked:
                lib.pn_delivery_settle(out.delivery)
            adaptor.dirty.add(out.link.connection)
        producer_settled = bool(lib.pn_delivery_settled(delivery))
        tracked = [out for out in stream.outs if out.tracked]
        outs = stream.outs
        stream.outs = []
        del self.by_link[link]
        if producer_settled:
            lib.pn_delivery_settle(delivery)
        else:
            message.delivery = delivery
            message.delivery_key = stream.key
            link.unsettled[stream.key] = message
        if tracked:
            out = tracked[0]
            self.out_deliveries.pop(out.key, None)
            message.out_link = out.link
            message.out_key = out.key
            out.link.unsettled[out.key] = message
            adaptor.outgoing[out.key] = message
            if lib.pn_delivery_remote_state(out.delivery) or lib.pn_delivery_settled(out.delivery):
                adaptor.consumer_disposition(message, out.delivery)
        elif stream.outcome is not None and not producer_settled:
            adaptor.finish_incoming(message, stream.outcome)
        self._end(stream)
        for out in outs:
            if self.sending.get(out.link) is stream:
                del self.sending[out.link]
                self._free(out.link)

    def _abort(self, stream: Stream) -> None:
        """The producer aborted the message, or left in the middle of it."""
        link = stream.in_link
        for out in stream.outs:
            self.out_deliveries.pop(out.key, None)
            lib.pn_delivery_abort(out.delivery)
            if out.tracked:
                out.link.outstanding -= 1
            self.adaptor.dirty.add(out.link.connection)
        outs = stream.outs
        stream.outs = []
        if link.handle is not None and lib.pn_link_current(link.handle) == stream.delivery:
            lib.pn_link_advance(link.handle)
        lib.pn_delivery_settle(stream.delivery)
        message = stream.message
        if message.credit_held:
            self.adaptor.forwarder.settled_upstream(message)
        self._end(stream)
        for out in outs:
            if self.sending.get(out.link) is stream:
                del self.sending[out.link]
                self._free(out.link)

    def _oversize(self, stream: Stream) -> None:
        """Past maxMessageSize: the consumers' deliveries are aborted, the producer refused."""
        link = stream.in_link
        delivery = stream.delivery
        for out in stream.outs:
            self.out_deliveries.pop(out.key, None)
            lib.pn_delivery_abort(out.delivery)
            if out.tracked:
                out.link.outstanding -= 1
            self.adaptor.dirty.add(out.link.connection)
        outs = stream.outs
        stream.outs = []
        del self.by_link[link]
        self._unhold(stream)
        message = stream.message
        if message.credit_held:
            self.adaptor.forwarder.settled_upstream(message)
        link.counters.delivered -= 1  # counted again as the refused delivery
        self.adaptor.policer.refuse_oversize(link, delivery, stream.received)
        link.read_on_arrival = True
        for out in outs:
            if self.sending.get(out.link) is stream:
                del self.sending[out.link]
                self._free(out.link)


def head_complete(head: bytes | bytearray) -> bool:
    """Whether ``head`` holds a message's sections up to the end of its properties (or
    shows it has none): all that routing reads. Raises MessageFormatError when what is
    there is malformed, not merely cut short."""
    data = bytes(head)
    try:
        _, _, props_start = find_sections(data)
        if props_start < 0:
            # A properties descriptor after the data tells where the leading sections
            # ended: found there, the data stopped at a section boundary, and properties
            # may follow.
            _, _, props_start = find_sections(data + _PROPERTIES_DESCRIPTOR)
    except MessageFormatError as error:
        if str(error).startswith("truncated"):
            return False
        raise
    if props_start < 0:
        return True  # another section follows the annotations: there are no properties
    if props_start == len(data):
        return False
    try:
        read_to(data, props_start)
    except MessageFormatError as error:
        if str(error).startswith("truncated"):
            return False
        raise
    return True


_PROPERTIES_DESCRIPTOR = b"\x00\x53\x73"
