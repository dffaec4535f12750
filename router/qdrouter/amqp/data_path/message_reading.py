"""Reading a message proton holds whole, and refusing one that was read but not routed.

A mixin of DeliveryAdaptor (amqp/data_path/deliveries.py), which gives it the attributes declared here.
"""

from __future__ import annotations

from typing import Any, Callable

from ...core.forwarder import Forwarder
from ...core.links import CoreLink, InFlight
from ...core.outcomes import REJECTED
from ..bindings.proton_ffi import ffi, lib
from ..bindings.proton_shim import delivery_key
from .whole_reads import read_whole


class MessageReading:
    forwarder: Forwarder
    _buffer: bytearray
    _pointer: Any
    _bytes: Any

    def finish_incoming(self, message: InFlight, outcome: int) -> None:
        raise NotImplementedError

    def read_message(self, link: CoreLink, delivery: Any, size: int, advance: bool = True) -> bytes:
        """An incoming message's bytes that proton holds (complete: the delivery is consumed)."""
        raw = self._recv(link.handle, size)
        if advance:
            lib.pn_link_advance(link.handle)
        return raw

    def read_whole(self, message: InFlight, on_whole: Callable[[bool], None]) -> None:
        """DeliveryIO: a streamed message for an in-process node is read whole, not sent on
        (amqp/data_path/whole_reads.py)."""
        read_whole(message, on_whole)  # type: ignore[arg-type]

    def reject_delivery(self, link: CoreLink, delivery: Any, condition: str, reason: str) -> None:
        """Refuse a message that was read but not routed (policy), with an error."""
        link.counters.delivered += 1
        if lib.pn_delivery_settled(delivery):
            lib.pn_delivery_settle(delivery)
            self.forwarder.release_credit(link)
            return
        key = delivery_key(delivery)
        message = InFlight(b"", b"", link, delivery, False, key)
        link.unsettled[key] = message
        self._reject_malformed(message, reason, condition)

    def _reject_malformed(self, message: InFlight, reason: str, name: str = "amqp:decode-error") -> None:
        delivery = message.delivery
        if delivery is not None:
            condition = lib.pn_disposition_condition(lib.pn_delivery_local(delivery))
            lib.pn_condition_set_name(condition, name.encode())
            lib.pn_condition_set_description(condition, reason.encode("utf-8", "replace"))
        message.in_link.credit -= 1
        self.finish_incoming(message, REJECTED)
        self.forwarder.release_credit(message.in_link)

    def _recv(self, handle: Any, size: int) -> bytes:
        """Up to ``size`` bytes of ``handle``'s current delivery. A message larger than the
        read buffer is read through a buffer of its own, freed with it: grown to fit, the
        shared buffer would keep the largest message's size for the router's lifetime."""
        if size <= len(self._buffer):
            count = lib.pn_link_recv(handle, self._pointer, size)
            return self._bytes[0:count] if count > 0 else b""
        pointer = ffi.new("char[]", size)
        count = lib.pn_link_recv(handle, pointer, size)
        return ffi.buffer(pointer, count)[:] if count > 0 else b""

