"""The reference path: a PN_DELIVERY handler that takes every arriving message through the
adaptor's general methods (DeliveryAdaptor.receive: read whole, then the forwarder decides),
none of the fast path's shortcuts (amqp/data_path/fast_path.py: the read into the arena, the
inline anycast, local multicast, producers left waiting unread).

Slower, and for one thing only: ``QDROUTER_DATA_PATH=reference`` in a router's environment
makes it use this handler, so that tests can check that the fast path gives what the general
path gives (tests/router/test_fast_path_agrees.py)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..bindings.proton_ffi import lib
from ..bindings.proton_shim import QD_EMPTY, QD_PARTIAL
from .delivery_cases import not_read_on_arrival, not_taken, policed_reader

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor
    from .fast_path import DeliveryHandler

DATA_PATH_VARIABLE = "QDROUTER_DATA_PATH"


def reference_asked() -> bool:
    return os.environ.get(DATA_PATH_VARIABLE) == "reference"


def reference_handler(adaptor: DeliveryAdaptor) -> DeliveryHandler:
    """``on_delivery(delivery, link_key, key)`` as fast_path.delivery_handler's, by the general path."""
    links_get = adaptor.links.get
    policed = adaptor.policed
    partial = lib.pn_delivery_partial
    pending = lib.pn_delivery_pending
    general_receive = adaptor.receive
    not_read = not_read_on_arrival(adaptor)
    read_policed = policed_reader(adaptor)
    unread = not_taken(adaptor)

    def on_delivery(delivery: Any, link_key: Any, key: Any) -> None:
        link = links_get(link_key)
        if link is None:
            if adaptor.link_router is not None:
                adaptor.link_router.on_delivery(delivery)
        elif not link.read_on_arrival:
            not_read(link, delivery, key)
        elif policed and link.handle in policed:
            raw = read_policed(link, delivery, key)
            if raw is not None:
                general_receive(link, delivery, key, raw)
        elif partial(delivery):
            unread(link, delivery, key, QD_PARTIAL)
        elif pending(delivery) <= 0:
            unread(link, delivery, key, QD_EMPTY)
        else:
            general_receive(link, delivery, key)

    return on_delivery
