"""The data path's batched proton calls: the compiled shim (proton_shim.c), or the same
functions in Python when it was not built.

Each function stands for several proton calls. Compiled, each costs one cffi call, and the
event loop takes up to BATCH events per call; the fallback makes the proton calls one by
one through cproton_ffi, as the router did before the shim (about 20% more CPU per
message: bench/README.md, "Session 12"). Set QDROUTER_PROTON_SHIM=off to use the
fallback even when the shim is built (the tests run both).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Tuple

import cproton_ffi

from .proton_ffi import ffi, lib
from .proton_shim_codes import QD_ABORTED, QD_EMPTY, QD_LARGE, QD_PARTIAL, QD_SETTLED

__all__ = ["BATCH", "COMPILED", "NOT_COMPILED_BECAUSE", "QD_ABORTED", "QD_EMPTY", "QD_LARGE",
           "QD_PARTIAL", "QD_SETTLED", "STATE_MASK", "consumer_update", "event_batches", "finish",
           "send", "send_settled", "take"]

# Events taken from the collector per call.
BATCH = 256
# The outcome bits of consumer_update's result.
STATE_MASK = QD_SETTLED - 1

Event = Tuple[int, Any, Any]


def _load() -> Tuple[Any, Any, str | None]:
    """The compiled module's (ffi, lib), or why it cannot be used."""
    if os.environ.get("QDROUTER_PROTON_SHIM", "").lower() in ("off", "0", "no", "false"):
        return None, None, "QDROUTER_PROTON_SHIM is off"
    try:
        from . import _proton_shim  # type: ignore[attr-defined]
    except ImportError as error:
        return None, None, f"not built ({error})"
    status = _proton_shim.lib.qd_shim_init(cproton_ffi.__file__.encode(), lib.PN_DELIVERY, lib.PN_TRANSPORT)
    if status != 0:
        return None, None, f"proton's functions not found in {cproton_ffi.__file__} ({status})"
    return _proton_shim.ffi, _proton_shim.lib, None


_shim_ffi, _shim, NOT_COMPILED_BECAUSE = _load()
COMPILED = _shim is not None


def _compiled_batches(collector: Any) -> Callable[[], Iterable[Event] | None]:
    collect = _shim.qd_collect
    unpack = _shim_ffi.unpack
    held = _shim_ffi.new("void *[]", BATCH)
    kinds = _shim_ffi.new("int[]", BATCH)
    objects = _shim_ffi.new("void *[]", BATCH)
    links = _shim_ffi.new("void *[]", BATCH)
    # The array objects are default arguments so that they live as long as the function.
    held_count = 0

    def next_batch(_arrays: tuple = (held, kinds, objects, links)) -> Iterable[Event] | None:
        nonlocal held_count
        count = collect(collector, held, held_count, kinds, objects, links, BATCH)
        held_count = count
        if not count:
            return None
        return zip(unpack(kinds, count), unpack(objects, count), unpack(links, count))

    return next_batch


def _python_batches(collector: Any) -> Callable[[], Iterable[Event] | None]:
    """Batches of one event, left at the head of the collector (which keeps its delivery or
    link valid) until the next call pops it: no reference counting needed."""
    peek = lib.pn_collector_peek
    pop = lib.pn_collector_pop
    event_type = lib.pn_event_type
    event_delivery = lib.pn_event_delivery
    delivery_link = lib.pn_delivery_link
    delivery_type = lib.PN_DELIVERY
    transport_type = lib.PN_TRANSPORT
    at_head = False

    def next_batch() -> Iterable[Event] | None:
        nonlocal at_head
        if at_head:
            pop(collector)
        event = peek(collector)
        while event:
            # Only delivery events carry a delivery: asking for it first saves
            # pn_event_type on the two delivery events of every message.
            delivery = event_delivery(event)
            if delivery:
                at_head = True
                return ((delivery_type, delivery, delivery_link(delivery)),)
            kind = event_type(event)
            if kind != transport_type:
                at_head = True
                return ((kind, event, None),)
            pop(collector)
            event = peek(collector)
        at_head = False
        return None

    return next_batch


def event_batches(collector: Any) -> Callable[[], Iterable[Event] | None]:
    """A function returning the collector's next events as (type, delivery or event, link or
    NULL), or None when it has none. An event's objects stay valid until the next call;
    transport events are left out."""
    return _compiled_batches(collector) if COMPILED else _python_batches(collector)


def _take(link: Any, delivery: Any, buffer: Any, capacity: int) -> int:
    if lib.pn_delivery_partial(delivery):
        return QD_PARTIAL
    size = lib.pn_delivery_pending(delivery)
    if size <= 0:
        return QD_EMPTY
    if size > capacity:
        return QD_LARGE
    count: int = lib.pn_link_recv(link, buffer, size)
    lib.pn_link_advance(link)
    if count < 0:
        lib.pn_delivery_settle(delivery)
        return QD_ABORTED
    return count


def _python_send_functions() -> Tuple[Callable[..., Any], Callable[..., None]]:
    tag_buffer = ffi.new("char[]", 8)
    tag_word = ffi.cast("uint64_t *", tag_buffer)
    tag = ffi.new("pn_bytes_t *", (8, tag_buffer))[0]
    settled_tag_buffer = ffi.new("char[]", b"s")
    settled_tag = ffi.new("pn_bytes_t *", (1, settled_tag_buffer))[0]
    new_delivery = lib.pn_delivery
    link_send = lib.pn_link_send
    advance = lib.pn_link_advance
    settle = lib.pn_delivery_settle

    # The tag buffers are default arguments so that they live as long as the functions:
    # the cast and the pn_bytes_t structs point into them without owning them.
    def send(link: Any, tag_value: int, payload: bytes, size: int,
             _buffers: tuple = (tag_buffer, settled_tag_buffer)) -> Any:
        tag_word[0] = tag_value
        delivery = new_delivery(link, tag)
        link_send(link, payload, size)
        advance(link)
        return delivery

    def send_settled(link: Any, payload: bytes, size: int,
                     _buffers: tuple = (tag_buffer, settled_tag_buffer)) -> None:
        delivery = new_delivery(link, settled_tag)
        link_send(link, payload, size)
        settle(delivery)

    return send, send_settled


def _consumer_update(delivery: Any, accepted: int) -> int:
    state: int = lib.pn_delivery_remote_state(delivery)
    if not lib.pn_delivery_settled(delivery):
        return state
    if state == accepted:
        lib.pn_delivery_settle(delivery)
    return state | QD_SETTLED


def _finish(delivery: Any, outcome: int) -> None:
    lib.pn_delivery_update(delivery, outcome)
    lib.pn_delivery_settle(delivery)


# take(link, delivery, buffer, capacity): a complete message's size, read and the link
# advanced, or a QD_* code. send(link, tag, payload, size): a new unsettled delivery.
# send_settled(link, payload, size). consumer_update(delivery, accepted): the consumer's
# outcome, | QD_SETTLED when settled (then settled here too if accepted).
# finish(delivery, outcome): the outcome given and the delivery settled.
take: Callable[[Any, Any, Any, int], int]
send: Callable[[Any, int, bytes, int], Any]
send_settled: Callable[[Any, bytes, int], None]
consumer_update: Callable[[Any, int], int]
finish: Callable[[Any, int], None]
if COMPILED:
    take = _shim.qd_take
    send = _shim.qd_send
    send_settled = _shim.qd_send_settled
    consumer_update = _shim.qd_consumer_update
    finish = _shim.qd_finish
else:
    take = _take
    send, send_settled = _python_send_functions()
    consumer_update = _consumer_update
    finish = _finish
