"""The cases of an arriving delivery that are not the common one, shared by the fast path
(amqp/data_path/fast_path.py) and the reference path (amqp/data_path/reference_path.py): a link
not read on arrival, a policed link, a message that cannot be read here whole."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...core.links import CoreLink
from ..bindings.proton_ffi import lib
from ..bindings.proton_shim import QD_EMPTY, QD_LARGE, QD_PARTIAL

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor


def not_read_on_arrival(adaptor: DeliveryAdaptor) -> Callable[[CoreLink, Any, Any], None]:
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


def policed_reader(adaptor: DeliveryAdaptor) -> Callable[[CoreLink, Any, Any], bytes | None]:
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


def not_taken(adaptor: DeliveryAdaptor) -> Callable[[CoreLink, Any, Any, int], None]:
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
