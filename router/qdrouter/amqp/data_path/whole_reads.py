"""Streamed deliveries that go to an in-process node (the management agent) are read whole.

A delivery large enough to be streamed is routed by its head before its body has arrived
(amqp/data_path/streaming.py). That head names the destination, and for a link with no target it is the
only place the destination is named. An in-process node needs the whole message, so the rest
of the delivery is collected rather than sent on. Only ``IN_PROCESS_LIMIT`` bytes are kept:
past that the node is given the head alone, which still holds the reply-to and correlation-id
the node needs to refuse the request (413). Memory therefore stays bounded whatever size a
client sends, on a named link and an anonymous one alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ...core.links import IN_PROCESS_LIMIT
from ..bindings.proton_ffi import lib
from .stream_state import Collect, Stream, StreamedMessage

if TYPE_CHECKING:
    from .streaming import Streams


def read_whole(message: StreamedMessage, on_whole: Callable[[bool], None]) -> None:
    """Called by the forwarder, while a streamed message is being routed: keep the rest of
    ``message`` for ``on_whole`` rather than sending it on."""
    message.stream.collect = Collect(message.raw, IN_PROCESS_LIMIT, on_whole)


def give_whole(streams: Streams, stream: Stream) -> None:
    """The collected delivery's last byte has arrived (its link is advanced past it), so the
    node gets the message with the producer's delivery left for it to settle."""
    collect = stream.collect
    assert collect is not None
    link = stream.in_link
    del streams.by_link[link]
    message = stream.message
    if collect.data is None:
        message.raw = message.payload = collect.head
        message.full_size = collect.size
    else:
        message.raw = message.payload = bytes(collect.data)
    delivery = stream.delivery
    if lib.pn_delivery_settled(delivery):
        lib.pn_delivery_settle(delivery)
        message.settled = True
    else:
        message.delivery = delivery
        message.delivery_key = stream.key
        link.unsettled[stream.key] = message
    stream.collect = None
    collect.on_whole(True)


def drop_collected(stream: Stream) -> None:
    """The delivery ends without being completed (aborted, its link gone, over maxMessageSize),
    so the node never gets it. The forwarder still frees the producer's credit."""
    collect = stream.collect
    if collect is not None:
        stream.collect = None
        collect.on_whole(False)
