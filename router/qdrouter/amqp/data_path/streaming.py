"""Large messages streamed through the router (cut-through), bounded per delivery: one still
arriving with ``STREAM_START`` bytes buffered is routed by its head, then each chunk is written
on at once; a consumer's blocked output (amqp/data_path/outbound.py) holds the producer's delivery and
socket back (qdrouterd's Q2 hold-off). Outcomes come after the last byte; maxMessageSize counts
as bytes arrive. docs/routing.md, "Large messages", tells the whole behaviour."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Dict, List

from ...core.links import CONTROL, CoreLink, InFlight
from ...core.outcomes import ACCEPTED, MODIFIED
from ..bindings.proton_ffi import ffi, lib
from ..bindings.proton_shim import delivery_key, pointer_key
from ..codec.message_sections import MessageFormatError
from .dispositions import copy_disposition
from .inbound import annotated, stripped
from .stream_completion import complete
from .stream_state import (
    CHUNK,
    HEAD_LIMIT,
    STREAM_START,
    Out,
    Stream,
    StreamedMessage,
    head_complete,
    hold,
    queued,
    refused_by_policy,
    unhold,
)
from .stream_turns import LinkTurns
from .whole_reads import drop_collected

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor


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
        # Copies for links carrying a stream wait their turn (amqp/data_path/stream_turns.py).
        self.turns = LinkTurns(adaptor.transmit)

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
            self.adaptor.policer.drop_held(link.handle)
        link.read_on_arrival = False
        self.by_link[link] = stream
        link.counters.delivered += 1
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
    def transmit(self, link: CoreLink, message: InFlight, presettled: bool) -> None:
        """The forwarder sends a streamed message on ``link`` (its delivery starts with the
        head; the rest follows as it arrives), or a message on a link carrying a stream."""
        if not isinstance(message, StreamedMessage):
            self.turns.wait(link, message, presettled)  # (a multicast copy toward a router)
            return
        stream = message.stream
        if stream.body_sent or stream.discard or link.handle is None or link in self.sending:
            # Too late to join (a multicast copy that waited for credit: the body has gone),
            # or its link carries another stream (amqp/data_path/stream_turns.py).
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
        out = Out(link, delivery, not presettled)
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
        """A streamed message's outcome: kept for its end if it is still arriving (True)."""
        stream: Stream = message.stream  # type: ignore[attr-defined]
        if stream.in_link not in self.by_link or self.by_link[stream.in_link] is not stream:
            return False
        stream.outcome = outcome
        if not stream.outs:
            # Nowhere to go (no route, released after waiting): the rest is dropped. (Pre-settled
            # multicast copies take the rest of a message accepted as they start.)
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
        """The producer's link is going: a complete message still goes on; one cut short is aborted."""
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
            if not drain and not stream.discard and stream.routed and stream.collect is None and (
                    not stream.outs or any(out.link.connection.out_blocked for out in stream.outs)):
                hold(stream)  # nobody to send to yet, or a consumer's output is full
                return
            count = recv(handle, pointer, CHUNK)
            if count <= 0:
                if count == 0:
                    break  # more to come
                if lib.pn_delivery_aborted(delivery):
                    self._abort(stream)
                else:
                    complete(self, stream)
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
            if stream.collect is not None:
                stream.collect.add(self._bytes[0:count])
                continue
            stream.body_sent = True
            for out in stream.outs:
                send(out.link.handle, pointer, count)
                account(out.link.connection, count)
            for out in stream.outs:
                self.adaptor.dirty.add(out.link.connection)
        unhold(stream, self.adaptor.dirty)

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
        adaptor = self.adaptor
        if adaptor.policed and refused_by_policy(adaptor.policed, adaptor.policer, stream):
            return
        adaptor.route_message(stream.in_link, message, True, False)
        if not stream.outs and not stream.discard and stream.collect is None and not queued(
                adaptor.table, message):
            stream.discard = True  # pre-settled, with nowhere to go: dropped by the forwarder

    def tick(self, now: float) -> None:
        """Held producers have their socket read once more now and then (stream_state.InputHold)."""
        if self.adaptor.link_router is not None:
            self.adaptor.link_router.streams.tick(now)
        for stream in list(self.by_link.values()):
            stream.hold_off.keep_alive(now, stream.delivery, self.adaptor.dirty)

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
                if out.tracked:
                    self.adaptor.forwarder.consumer_settled(out.link)
                if out.tracked:
                    stream.outcome = outcome
        if not stream.outs and stream.in_link in self.by_link:
            stream.discard = True
            if not stream.pumping:
                self._pump(stream)

    def _free(self, link: CoreLink) -> None:
        """``link``'s stream has ended (or left it): what waited for it, and its credit, move."""
        self.turns.go(link)
        if link.handle is not None:
            self.adaptor.resume_consumer(link)

    def end(self, stream: Stream) -> None:
        """The incoming delivery is done with: its link is read again from the next one."""
        link = stream.in_link
        if self.by_link.get(link) is stream:
            del self.by_link[link]
        unhold(stream, self.adaptor.dirty)
        drop_collected(stream)
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

    def _abort(self, stream: Stream) -> None:
        """The producer aborted the message, or left in the middle of it."""
        link = stream.in_link
        outs = self._abort_outs(stream)
        if link.handle is not None and lib.pn_link_current(link.handle) == stream.delivery:
            lib.pn_link_advance(link.handle)
        lib.pn_delivery_settle(stream.delivery)
        self.end(stream)
        self.release(stream, outs)

    def _oversize(self, stream: Stream) -> None:
        """Past maxMessageSize: the consumers' deliveries are aborted, the producer refused."""
        link = stream.in_link
        outs = self._abort_outs(stream)
        del self.by_link[link]
        unhold(stream, self.adaptor.dirty)
        link.counters.delivered -= 1  # counted again as the refused delivery
        drop_collected(stream)
        self.adaptor.policer.refuse_oversize(link, stream.delivery, stream.received)
        link.read_on_arrival = True
        self.release(stream, outs)

    def _abort_outs(self, stream: Stream) -> List[Out]:
        """Abort every outgoing delivery of ``stream`` (their consumers see the abort)."""
        for out in stream.outs:
            self.out_deliveries.pop(out.key, None)
            lib.pn_delivery_abort(out.delivery)
            if out.tracked:
                self.adaptor.forwarder.consumer_settled(out.link)
            self.adaptor.dirty.add(out.link.connection)
        outs, stream.outs = stream.outs, []
        if stream.message.credit_held:
            self.adaptor.forwarder.settled_upstream(stream.message)
        return outs

    def release(self, stream: Stream, outs: List[Out]) -> None:
        """The links that carried ``stream`` take other messages again."""
        for out in outs:
            if self.sending.get(out.link) is stream:
                del self.sending[out.link]
                self._free(out.link)
