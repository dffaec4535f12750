"""Link-routed messages streamed through (cut-through), bounded as routed ones are.

A link-routed delivery passes straight from one link to its peer (amqp/links/link_routing.py).
Read whole, a large one would sit in proton until complete and then be copied twice; so
once ``STREAM_START`` bytes of one still arriving are buffered, what arrives is passed on
as it comes, into a delivery of the same tag on the peer link. While the peer connection
is blocked (its output over the per-connection bound, amqp/data_path/outbound.py), the producer's
delivery and its connection's socket are not read, as amqp/data_path/streaming.py holds a routed
message's producer (stream_state.InputHold: its socket is still read now and then, for its
heartbeats), until that connection takes output again.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

from ..bindings.proton_ffi import ffi, lib
from ..data_path.stream_state import CHUNK, STREAM_START, InputHold


class RoutedStreams:
    """``end(routed, peer, incoming, outgoing)`` is told of a stream's last byte: the
    link router settles or pairs the two deliveries as for a message passed whole."""

    def __init__(self, dirty: Any, end: Callable[[Any, Any, Any, Any], None], outbound: Any = None) -> None:
        self.dirty = dirty
        # The router's OutboundLimits: what is passed on counts against its bounds.
        self.outbound = outbound
        self.end = end
        # Incoming delivery -> its delivery on the peer link, while it streams.
        self.outs: Dict[Any, Any] = {}
        # Incoming deliveries held back, with their (routed, peer) links and their hold.
        self.held: Dict[Any, Tuple[Any, Any, InputHold]] = {}
        self._buffer = bytearray(CHUNK)
        self._pointer = ffi.from_buffer(self._buffer)

    def arrived(self, routed: Any, peer: Any, delivery: Any) -> bool:
        """A delivery event on a routed producer's link: True when it streams (handled)."""
        if delivery not in self.outs:
            if not lib.pn_delivery_partial(delivery) or lib.pn_delivery_pending(delivery) < STREAM_START:
                return False
            tag = lib.pn_delivery_tag(delivery)
            self.outs[delivery] = lib.pn_delivery(peer.pn_link, tag)
        self._move(routed, peer, delivery)
        return True

    def resume(self) -> None:
        """Held deliveries go on where their peers have taken their output."""
        for delivery, (routed, peer, _) in list(self.held.items()):
            self._move(routed, peer, delivery)

    def tick(self, now: float) -> None:
        """As resume(); producers held back for a while have their socket read once more."""
        self.resume()
        for delivery, (_, _, hold_off) in self.held.items():
            hold_off.keep_alive(now, delivery, self.dirty)

    def gone(self, routed: Any) -> None:
        """``routed`` or its peer is closing: its stream, if any, is aborted."""
        for delivery, out in list(self.outs.items()):
            if lib.pn_delivery_link(delivery) in (routed.pn_link, getattr(routed.peer, "pn_link", None)):
                self._unhold(delivery)
                del self.outs[delivery]
                lib.pn_delivery_abort(out)

    def _move(self, routed: Any, peer: Any, delivery: Any) -> None:
        out = self.outs[delivery]
        recv = lib.pn_link_recv
        send = lib.pn_link_send
        pointer = self._pointer
        account = self.outbound.account if self.outbound is not None else None
        while True:
            if peer.connection.out_blocked and lib.pn_delivery_partial(delivery):
                self._hold(routed, peer, delivery)
                break
            count = recv(routed.pn_link, pointer, CHUNK)
            if count == 0:
                self._unhold(delivery)
                break
            if count < 0:
                self._unhold(delivery)
                del self.outs[delivery]
                lib.pn_link_advance(routed.pn_link)
                if lib.pn_delivery_aborted(delivery):
                    lib.pn_delivery_abort(out)
                    lib.pn_delivery_settle(delivery)
                else:
                    lib.pn_link_advance(peer.pn_link)
                    self.end(routed, peer, delivery, out)
                break
            send(peer.pn_link, pointer, count)
            if account is not None:
                account(peer.connection, count)
        self.dirty.add(peer.connection)
        self.dirty.add(routed.connection)

    def _hold(self, routed: Any, peer: Any, delivery: Any) -> None:
        entry = self.held.get(delivery)
        if entry is None:
            entry = self.held[delivery] = (routed, peer, InputHold(routed.connection))
        entry[2].hold()  # (again, after a read for heartbeats)

    def _unhold(self, delivery: Any) -> None:
        entry = self.held.pop(delivery, None)
        if entry is not None:
            entry[2].release(self.dirty)
