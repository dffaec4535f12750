"""The data path's batched proton calls: the compiled shim (proton_shim.c), or the same
functions in Python when it was not built.

Each function stands for several proton calls. Compiled, each costs one cffi call, and the
event loop takes up to BATCH events per call; the fallback (proton_shim_fallback.py) makes
the proton calls one by one through cproton_ffi (more
CPU per message: bench/HISTORY.md). Set QDROUTER_PROTON_SHIM=off to use the
fallback even when the shim is built (the tests run both).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Iterable, Tuple

import cproton_ffi

from . import proton_shim_fallback as fallback
from .proton_ffi import ffi, lib
from .proton_shim_codes import (
    QD_ABORTED,
    QD_EMPTY,
    QD_INCOMING_DELIVERY,
    QD_INPUT_OVER,
    QD_IO_OPEN,
    QD_LARGE,
    QD_NO_ANNOTATIONS,
    QD_OUTPUT_FAILED,
    QD_PARTIAL,
    QD_SETTLED,
    QD_TAKEN_SETTLED,
    QD_WOULD_BLOCK,
)
from .proton_shim_fallback import Event

__all__ = ["BATCH", "COMPILED", "NOT_COMPILED_BECAUSE", "ON_PYPY", "QD_ABORTED", "QD_EMPTY",
           "QD_INCOMING_DELIVERY", "QD_INPUT_OVER", "QD_IO_OPEN", "QD_LARGE", "QD_NO_ANNOTATIONS",
           "QD_OUTPUT_FAILED", "QD_PARTIAL", "QD_SETTLED", "QD_TAKEN_SETTLED",
           "QD_WOULD_BLOCK", "STATE_MASK",
           "EventArrays", "consumer_update", "current", "delivery_key", "delivery_of", "event_arrays",
           "event_batches", "finish", "link_waiting", "pointer_key", "read_socket", "send",
           "send_settled", "take", "write_socket"]

# Events taken from the collector per call.
BATCH = 256
# The outcome bits of consumer_update's result.
STATE_MASK = QD_SETTLED - 1
# How a batch's arrays are cheapest to walk differs (per event: PyPy 76 ns with
# ffi.unpack and zip, 4.5 with a generator indexing them; CPython 54, 114 and 38 ns with zip
# over slices of the arrays).
ON_PYPY = sys.implementation.name == "pypy"


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


class EventArrays:
    """A batch of events as the compiled shim leaves them: ``next_count()`` takes the next
    batch (releasing the previous one) and returns how many events it holds, 0 for none;
    event i is (kinds[i], objects[i], links[i]), as ``event_batches`` would give it, and
    keys[i] is objects[i]'s address as an int (its delivery_key, for a delivery event)."""

    def __init__(self, collector: Any) -> None:
        self.kinds = _shim_ffi.new("int[]", BATCH)
        self.objects = _shim_ffi.new("void *[]", BATCH)
        self.links = _shim_ffi.new("intptr_t[]", BATCH)
        self.keys = _shim_ffi.cast("intptr_t *", self.objects)
        self._held = _shim_ffi.new("void *[]", BATCH)
        self._held_count = 0
        self._collector = collector
        self._collect = _shim.qd_collect

    def next_count(self) -> int:
        count: int = self._collect(self._collector, self._held, self._held_count, self.kinds,
                                   self.objects, self.links, BATCH)
        self._held_count = count
        return count


def _compiled_batches(collector: Any) -> Callable[[], Iterable[Event] | None]:
    arrays = EventArrays(collector)
    next_count = arrays.next_count
    kinds, objects, links = arrays.kinds, arrays.objects, arrays.links

    def next_batch() -> Iterable[Event] | None:
        count = next_count()
        if not count:
            return None
        return zip(kinds[0:count], objects[0:count], links[0:count])

    return next_batch


def event_arrays(collector: Any) -> EventArrays | None:
    """The collector's events in the shim's arrays, for the event loop on PyPy: indexing
    them there costs less than any iterator over them (a generator yielding each event cost
    the JIT's trace about 130 operations per event). None without the compiled shim, or on
    CPython, where ``zip`` over slices of the arrays (``event_batches``) is the fastest."""
    return EventArrays(collector) if COMPILED and ON_PYPY else None


def _address(pointer: Any) -> int:
    return int(ffi.cast("intptr_t", pointer))


def _pointer(address: int) -> Any:
    return ffi.cast("void *", address)


def _itself(pointer: Any) -> Any:
    return pointer


# pointer_key(link): the key the event loop gives a delivery's link by. Compiled, the link's
# address as an int: an int key costs PyPy neither a pointer object nor a call to compare
# keys. The fallback gives the pointer itself: an int made of it in Python would cost more
# than the dict saves.
pointer_key: Callable[[Any], Any] = _address if COMPILED else _itself

# delivery_key(delivery): the key of a delivery in link.unsettled and the adaptor's outgoing
# dict; delivery_of(key) is the delivery again. On PyPy with the compiled shim, its address
# as an int, which the event arrays (EventArrays.keys) and send give as such: PyPy's dict
# operations on pointer objects call out to hash and compare them (about 150 ns for a
# message's five, against 55 with ints). Elsewhere the pointer itself: CPython hashes
# pointers in C, and an int made of one would cost it more than it saves. Making a key from
# a pointer costs PyPy an allocation: only the paths off the hot one do (delivery_key).
INT_DELIVERY_KEYS = COMPILED and ON_PYPY
delivery_key: Callable[[Any], Any] = _address if INT_DELIVERY_KEYS else _itself
delivery_of: Callable[[Any], Any] = _pointer if INT_DELIVERY_KEYS else _itself


def event_batches(collector: Any) -> Callable[[], Iterable[Event] | None]:
    """A function returning the collector's next events as (type, delivery or event, the
    link's pointer_key, or 0 or None), or None when it has none. Each event's objects stay valid
    until the batch is done (the next call); transport events are left out. A delivery
    event's type is QD_INCOMING_DELIVERY when its link is known to receive (the compiled
    shim tells), PN_DELIVERY otherwise."""
    return _compiled_batches(collector) if COMPILED else fallback.event_batches(collector)


# take(link, delivery, buffer, capacity): a complete message's size, read and the link
# advanced (+ QD_NO_ANNOTATIONS when it starts without message annotations, +
# QD_TAKEN_SETTLED when its producer settled it and the shim did too), or a QD_* code.
# send(link, tag, payload, size): a new unsettled delivery's delivery_key.
# send_settled(link, payload, size). consumer_update(delivery, accepted): the consumer's
# outcome, | QD_SETTLED when settled (then settled here too if accepted).
# finish(delivery, outcome): the outcome given and the delivery settled.
# current(link, key_out): the link's current delivery (NULL if none); with int delivery
# keys, its delivery_key in key_out[0] (an intptr_t[1]), else key_out is left alone.
# link_waiting(link, on): marks a receiving link as waiting (amqp/data_path/waiting_producers.py) or
# not; the compiled shim then leaves out its unread deliveries' events (-1: too many wait).
# read_socket(transport, fd, budget): QD_IO_OPEN or QD_INPUT_OVER (see qd_read).
# write_socket(transport, fd): QD_IO_OPEN, QD_WOULD_BLOCK or QD_OUTPUT_FAILED (qd_write).
take: Callable[[Any, Any, Any, int], int]
send: Callable[[Any, int, bytes, int], Any]
send_settled: Callable[[Any, bytes, int], None]
consumer_update: Callable[[Any, int], int]
finish: Callable[[Any, int], None]
read_socket: Callable[[Any, int, int], int]
write_socket: Callable[[Any, int], int]
current: Callable[[Any, Any], Any]
link_waiting: Callable[[Any, int], int]
if COMPILED:
    take = _shim.qd_take
    current = _shim.qd_current
    link_waiting = _shim.qd_link_waiting
    send = _shim.qd_send_keyed if INT_DELIVERY_KEYS else _shim.qd_send
    send_settled = _shim.qd_send_settled
    consumer_update = _shim.qd_consumer_update
    finish = _shim.qd_finish
    read_socket = _shim.qd_read
    write_socket = _shim.qd_write
else:
    take = fallback.take_function()
    send, send_settled = fallback.send_functions()
    consumer_update = fallback.consumer_update_function()
    finish = fallback.finish_function()
    read_socket, write_socket = fallback.socket_io_functions()
    current = fallback.current_function()
    link_waiting = fallback.link_waiting
