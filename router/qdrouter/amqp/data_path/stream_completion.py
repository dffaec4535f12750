"""A streamed message's last byte has arrived and gone on (amqp/data_path/streaming.py): its
outgoing deliveries are finished, the producer's delivery settled or kept for the consumer's
outcome, and the links that carried it take other messages again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..bindings.proton_ffi import lib
from .stream_state import Stream
from .whole_reads import give_whole

if TYPE_CHECKING:
    from .streaming import Streams


def complete(streams: Streams, stream: Stream) -> None:
    """The producer's last byte has arrived and gone on."""
    link = stream.in_link
    delivery = stream.delivery
    lib.pn_link_advance(link.handle)
    adaptor = streams.adaptor
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
    if stream.collect is not None:
        give_whole(streams, stream)  # an in-process node's
        return streams.end(stream)
    for out in stream.outs:
        lib.pn_link_advance(out.link.handle)
        if not out.tracked:
            lib.pn_delivery_settle(out.delivery)
        adaptor.dirty.add(out.link.connection)
    producer_settled = bool(lib.pn_delivery_settled(delivery))
    tracked = [out for out in stream.outs if out.tracked]
    outs, stream.outs = stream.outs, []
    del streams.by_link[link]
    if producer_settled:
        lib.pn_delivery_settle(delivery)
    else:
        message.delivery = delivery
        message.delivery_key = stream.key
        link.unsettled[stream.key] = message
    if tracked:
        out = tracked[0]
        streams.out_deliveries.pop(out.key, None)
        message.out_link = out.link
        message.out_key = out.key
        out.link.unsettled[out.key] = message
        adaptor.outgoing[out.key] = message
        if lib.pn_delivery_remote_state(out.delivery) or lib.pn_delivery_settled(out.delivery):
            adaptor.consumer_disposition(message, out.delivery)
    elif stream.outcome is not None and not producer_settled:
        adaptor.finish_incoming(message, stream.outcome)
    streams.end(stream)
    streams.release(stream, outs)
