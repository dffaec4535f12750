"""The PN_DELIVERY handler for deliveries the router does not track as outgoing (the event
loop gives those to ``DeliveryAdaptor.consumer_disposition``). Hot path.

A closure over local names, because at hundreds of thousands of calls a second attribute and
global lookups are a real share of the cost. The common case (addressed link, complete
message without router annotations, an anycast consumer with credit) is handled inline, with
the core's send steps (core/sends.py); everything else goes through the adaptor's general
methods (amqp/data_path/deliveries.py), so the forwarder's decisions stay the reference. The cases
that are not the common one (a link not read on arrival, a policed link, a message that
cannot be read here whole) are closures of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...core.address_table import MULTICAST, UNAVAILABLE, Address
from ...core.links import CoreLink, InFlight
from ..bindings.proton_ffi import ffi, lib
from ..bindings.proton_shim import (
    ON_PYPY,
    QD_EMPTY,
    QD_LARGE,
    QD_NO_ANNOTATIONS,
    QD_PARTIAL,
    QD_TAKEN_SETTLED,
    take,
)
from .local_multicast import local_multicast

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor

DeliveryHandler = Callable[[Any, Any, Any], None]

QD_PREFIX = b"x-opt-qd."
# The fast path reads messages of up to this many bytes.
FAST_READ = 64 * 1024
# How most messages without a message-annotations section begin: properties first,
# after an empty header (list0, as proton clients encode a default one) or none. Router
# annotations live only in a message-annotations section, which would come before them.
_PLAIN_HEAD_AFTER_HEADER = b"\x00SpE\x00Ss"
_PLAIN_HEAD = b"\x00Ss"


def delivery_handler(adaptor: DeliveryAdaptor) -> DeliveryHandler:
    """``on_delivery(delivery, link_key, key)``: ``link_key`` the key of the delivery's link
    in ``adaptor.links``, ``key`` the delivery's own (proton_shim.delivery_key)."""
    links_get = adaptor.links.get
    is_settled = lib.pn_delivery_settled
    settle = lib.pn_delivery_settle
    forwarder = adaptor.forwarder
    forward = forwarder.forward
    passed_on = forwarder.passed_on
    general_receive = adaptor.receive
    qd_prefix = QD_PREFIX
    pending_append = adaptor.pending_sends.append
    multicast = MULTICAST
    unavailable = UNAVAILABLE
    policed = adaptor.policed
    state = adaptor
    fast_pointer = ffi.from_buffer(adaptor.arena)
    fast_bytes = ffi.buffer(fast_pointer)
    in_arena = ON_PYPY
    arena_limit = len(adaptor.arena) - FAST_READ
    no_annotations = QD_NO_ANNOTATIONS
    taken_settled = QD_TAKEN_SETTLED
    flush_pending = adaptor.flush_pending
    return_credit_now = adaptor.return_credit_now
    multicast_here = local_multicast(adaptor)
    plain_head_after_header = _PLAIN_HEAD_AFTER_HEADER
    plain_head = _PLAIN_HEAD
    wait = adaptor.waiting.wait
    # Stands for the consumer when there is none: it has credit, so the one test of
    # whether a message must wait is a test of the consumer's credit.
    nobody = CoreLink(0, "", False, None, None, None)
    nobody.credit = 1
    not_read = _not_read_on_arrival(adaptor)
    read_policed = _policed_reader(adaptor)
    unread = _not_taken(adaptor)

    def on_delivery(delivery: Any, link_key: Any, key: Any) -> None:
        link = links_get(link_key)
        if link is None:
            if state.link_router is not None:
                state.link_router.on_delivery(delivery)
            return
        if not link.read_on_arrival:
            not_read(link, delivery, key)
            return
        raw = None
        # None only where the distribution is taken as unavailable below, which goes the
        # general path before anything reads the address.
        address: Address = link.address  # type: ignore[assignment]
        if address is not None and address.consumers:
            distribution = address.distribution
            consumers = address.consumers
            out = consumers[0]
        else:
            # "unavailable" also when nobody consumes here: the general path decides then.
            distribution = unavailable
            out = nobody
        if policed and link.handle in policed:
            raw = read_policed(link, delivery, key)
            if raw is None:
                return
            read_here = settled_here = False  # policy read it, and advanced the link
            plain = raw.startswith(plain_head_after_header) or raw.startswith(plain_head)
            start = count = 0
        else:
            if out.credit <= 0 and (distribution is not multicast and len(consumers) == 1
                                    and not address.remote):
                # Its one consumer has no credit: the message waits, unread, in proton
                # (amqp/data_path/waiting_producers.py), and with it every later one on the link.
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
                count = take(link.handle, delivery, fast_pointer + start, FAST_READ)
            else:
                start = 0
                count = take(link.handle, delivery, fast_pointer, FAST_READ)
            if count < 0:
                unread(link, delivery, key, count)
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
        # Inline anycast decision: the core's send steps (core/sends.py), with the
        # proton send deferred to flush_sends like every other send. Unsettled from a
        # client, the producer's credit comes back with its outcome; else now.
        address.counters.deliveries_ingress += 1
        pending_append((out, payload, message))
        if passed_on(out, link, message, address) and link.owed_credit * 2 >= link.capacity:
            return_credit_now(link)

    return on_delivery


def _not_read_on_arrival(adaptor: DeliveryAdaptor) -> Callable[[CoreLink, Any, Any], None]:
    """A delivery on a link whose messages are not read as they arrive: a producer that waits
    for credit or streams, or a consumer's update the router does not track."""
    is_settled = lib.pn_delivery_settled
    settle = lib.pn_delivery_settle
    waiting_event = adaptor.waiting.on_event
    streaming = adaptor.streams.by_link
    stream_event = adaptor.streams.on_event
    stream_update = adaptor.streams.consumer_update

    def not_read(link: CoreLink, delivery: Any, key: Any) -> None:
        if link.incoming:
            (stream_event if link in streaming else waiting_event)(link, delivery, key)
        elif stream_update(delivery, key):
            pass  # an update of a streamed message's delivery (amqp/data_path/streaming.py)
        elif is_settled(delivery):
            # An outgoing delivery the router no longer tracks (settled already).
            settle(delivery)

    return not_read


def _policed_reader(adaptor: DeliveryAdaptor) -> Callable[[CoreLink, Any, Any], bytes | None]:
    """Policy reads a policed producer's message (size, user-id): its bytes when it passed
    and is whole, to take the fast path's other steps; None when it was dealt with here."""
    is_settled = lib.pn_delivery_settled
    producer_settled = adaptor.producer_settled
    start_stream = adaptor.streams.start

    def read_policed(link: CoreLink, delivery: Any, key: Any) -> bytes | None:
        if key in link.unsettled:
            # An update of a message already read (the producer settled first):
            # nothing for policy to read.
            if is_settled(delivery):
                producer_settled(link, delivery, key)
            return None
        policer = adaptor.policer
        if lib.pn_delivery_partial(delivery) and start_stream(link, delivery, key, policer.held(link.handle)):
            return None
        raw: bytes | None = policer.message(link, delivery)
        return raw

    return read_policed


def _not_taken(adaptor: DeliveryAdaptor) -> Callable[[CoreLink, Any, Any, int], None]:
    """A delivery the fast path's read (proton_shim.take) did not take, by its answer."""
    readable = lib.pn_delivery_readable
    is_settled = lib.pn_delivery_settled
    general_receive = adaptor.receive
    producer_settled = adaptor.producer_settled
    start_stream = adaptor.streams.start

    def unread(link: CoreLink, delivery: Any, key: Any, answer: int) -> None:
        if answer == QD_EMPTY:
            # Nothing buffered: an update of a delivery already read (the producer
            # settled first), or an empty or aborted message (current on its link).
            if readable(delivery):
                general_receive(link, delivery, key)
            elif is_settled(delivery):
                producer_settled(link, delivery, key)
        elif answer == QD_LARGE:
            general_receive(link, delivery, key)
        elif answer == QD_PARTIAL:
            # More to come: streamed once large enough (amqp/data_path/streaming.py), else
            # read once whole. (Settled by its producer, it is not settled here:
            # that would discard the rest of it.)
            start_stream(link, delivery, key)
        # QD_ABORTED: the producer gave up on it; read past, and settled.

    return unread
