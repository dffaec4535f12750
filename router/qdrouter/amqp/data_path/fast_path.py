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
    QD_NO_ANNOTATIONS,
    QD_TAKEN_SETTLED,
    take,
)
from .delivery_cases import not_read_on_arrival, not_taken, policed_reader
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
    not_read = not_read_on_arrival(adaptor)
    read_policed = policed_reader(adaptor)
    unread = not_taken(adaptor)

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
