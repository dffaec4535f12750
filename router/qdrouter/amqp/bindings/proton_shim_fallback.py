"""The proton shim's functions in Python, for when the compiled shim (proton_shim.c) was not
built: the same proton calls, one cffi call each. proton_shim.py chooses between the two.

Proton's functions are bound as closure variables: on this path every lookup counts."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator, List, Tuple

from .proton_ffi import ffi, lib
from .proton_shim_codes import (
    QD_ABORTED,
    QD_EMPTY,
    QD_INPUT_OVER,
    QD_IO_OPEN,
    QD_LARGE,
    QD_OUTPUT_FAILED,
    QD_PARTIAL,
    QD_SETTLED,
    QD_WOULD_BLOCK,
)

Event = Tuple[int, Any, Any]


def event_batches(collector: Any) -> Callable[[], Iterable[Event] | None]:
    """The collector's events as a generator that pops each one only when asked for the
    next: while the router handles an event it is still at the head of the collector,
    which keeps its delivery, link or connection valid (no reference counting needed)."""
    peek = lib.pn_collector_peek
    pop = lib.pn_collector_pop
    event_type = lib.pn_event_type
    event_delivery = lib.pn_event_delivery
    delivery_link = lib.pn_delivery_link
    delivery_type = lib.PN_DELIVERY
    transport_type = lib.PN_TRANSPORT

    def events(event: Any) -> Iterator[Event]:
        while event:
            # Only delivery events carry a delivery: asking for it first saves
            # pn_event_type on the two delivery events of every message.
            delivery = event_delivery(event)
            if delivery:
                # The link itself is its key here (proton_shim.pointer_key): making an int
                # of it would cost CPython more than the dict saves.
                yield delivery_type, delivery, delivery_link(delivery)
            else:
                kind = event_type(event)
                if kind != transport_type:
                    yield kind, event, None
            pop(collector)
            event = peek(collector)

    def next_batch() -> Iterable[Event] | None:
        event = peek(collector)
        return events(event) if event else None

    return next_batch


def take_function() -> Callable[[Any, Any, Any, int], int]:
    partial = lib.pn_delivery_partial
    pending = lib.pn_delivery_pending
    recv = lib.pn_link_recv
    advance = lib.pn_link_advance
    settle = lib.pn_delivery_settle

    def take(link: Any, delivery: Any, buffer: Any, capacity: int) -> int:
        if partial(delivery):
            return QD_PARTIAL
        size = pending(delivery)
        if size <= 0:
            return QD_EMPTY
        if size > capacity:
            return QD_LARGE
        count: int = recv(link, buffer, size)
        advance(link)
        if count < 0:
            settle(delivery)
            return QD_ABORTED
        # Never with QD_NO_ANNOTATIONS (the caller's search costs less here) nor with
        # QD_TAKEN_SETTLED (the caller asks and settles; the same calls).
        return count

    return take


def send_functions() -> Tuple[Callable[[Any, int, bytes, int], Any], Callable[[Any, bytes, int], None]]:
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
             _buffers: Tuple[Any, Any] = (tag_buffer, settled_tag_buffer)) -> Any:
        tag_word[0] = tag_value
        delivery = new_delivery(link, tag)
        link_send(link, payload, size)
        advance(link)
        return delivery

    def send_settled(link: Any, payload: bytes, size: int,
                     _buffers: Tuple[Any, Any] = (tag_buffer, settled_tag_buffer)) -> None:
        delivery = new_delivery(link, settled_tag)
        link_send(link, payload, size)
        settle(delivery)  # also advances: the new delivery is the current one

    return send, send_settled


def consumer_update_function() -> Callable[[Any, int], int]:
    remote_state = lib.pn_delivery_remote_state
    is_settled = lib.pn_delivery_settled
    settle = lib.pn_delivery_settle

    def consumer_update(delivery: Any, accepted: int) -> int:
        state: int = remote_state(delivery)
        if not is_settled(delivery):
            return state
        if state == accepted:
            settle(delivery)
        return state | QD_SETTLED

    return consumer_update


def finish_function() -> Callable[[Any, int], None]:
    update = lib.pn_delivery_update
    settle = lib.pn_delivery_settle

    def finish(delivery: Any, outcome: int) -> None:
        update(delivery, outcome)
        settle(delivery)

    return finish


def current_function() -> Callable[[Any, Any], Any]:
    """qd_current: the link's current delivery. Without the compiled shim deliveries are
    their own keys, so there is no key to give."""
    link_current = lib.pn_link_current

    def current(link: Any, key_out: Any) -> Any:
        return link_current(link)

    return current


def link_waiting(link: Any, on: int) -> int:
    """qd_link_waiting: the fallback's events come one by one from the collector, and the
    router ignores those of a waiting link's unread deliveries itself."""
    return 0


# The most either function moves between a socket and a transport per system call.
IO_CHUNK = 256 * 1024


def socket_io_functions() -> Tuple[Callable[[Any, int, int], int], Callable[[Any, int], int]]:
    """read(transport, fd, budget) and write(transport, fd), as qd_read and qd_write, through
    buffers of our own: python-qpid-proton's cffi module does not declare the calls that
    reach proton's buffers in place, so every byte is copied once more than compiled."""
    read_buffer = bytearray(IO_CHUNK)
    read_view = memoryview(read_buffer)
    read_pointer = ffi.from_buffer(read_buffer)
    write_buffer = bytearray(IO_CHUNK)
    write_view = memoryview(write_buffer)
    write_pointer = ffi.from_buffer(write_buffer)
    capacity_of = lib.pn_transport_capacity
    push = lib.pn_transport_push
    close_tail = lib.pn_transport_close_tail
    pending_of = lib.pn_transport_pending
    peek = lib.pn_transport_peek
    pop = lib.pn_transport_pop
    close_head = lib.pn_transport_close_head
    write_fd = os.write
    readv = getattr(os, "readv", None)
    if readv is None:
        # PyPy 3.9 has no os.readv: read into a new bytes object, and copy that in.
        read_fd = os.read

        def readv(fd: int, views: List[memoryview]) -> int:
            data = read_fd(fd, len(views[0]))
            views[0][:len(data)] = data
            return len(data)

    def read(transport: Any, fd: int, budget: int) -> int:
        while budget > 0:
            capacity = capacity_of(transport)
            if capacity < 0:
                return QD_INPUT_OVER
            if capacity == 0:
                return QD_IO_OPEN
            if capacity > IO_CHUNK:
                capacity = IO_CHUNK
            try:
                count = readv(fd, [read_view[:capacity]])
            except (BlockingIOError, InterruptedError):
                return QD_IO_OPEN
            except OSError:
                count = 0  # a reset or other failure ends the input like an orderly close
            if count == 0:
                close_tail(transport)
                return QD_INPUT_OVER
            push(transport, read_pointer, count)
            if count < capacity:
                return QD_IO_OPEN
            budget -= count
        return QD_IO_OPEN

    def write(transport: Any, fd: int) -> int:
        while True:
            pending = pending_of(transport)
            if pending <= 0:
                return QD_IO_OPEN
            if pending > IO_CHUNK:
                pending = IO_CHUNK
            count = peek(transport, write_pointer, pending)
            if count <= 0:
                return QD_IO_OPEN
            try:
                sent = write_fd(fd, write_view[:count])
            except (BlockingIOError, InterruptedError):
                return QD_WOULD_BLOCK
            except OSError:
                close_head(transport)
                close_tail(transport)
                return QD_OUTPUT_FAILED
            pop(transport, sent)
            if sent < count:
                return QD_WOULD_BLOCK

    return read, write
