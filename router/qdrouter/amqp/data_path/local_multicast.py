"""A pre-settled message for a multicast address consumed only on this router goes
straight to every consumer (hot path), when all of them have credit.

The forwarder's walk for such a message (receive, route, multicast, a send and a transmit
per consumer, then the copies' bookkeeping) comes down to the core's send steps
(core/sends.py) per consumer, done here in one function. Anything else (a consumer without
credit, whose copy must wait in its backlog; a consumer that keeps router annotations;
other routers' consumers; unsettled messages, whose outcome waits for the copies) returns
False and the forwarder decides, so its decisions stay the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ...core.address_table import Address
from ...core.links import CoreLink

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor


def local_multicast(adaptor: DeliveryAdaptor) -> Callable[[CoreLink, Address, bytes], bool]:
    """``multicast(producer, address, raw)``: True when a copy of ``raw`` (a pre-settled
    message without router annotations) was queued for each of ``address``'s consumers."""
    pending_append = adaptor.pending_sends.append
    copies_passed_on = adaptor.forwarder.copies_passed_on

    def multicast(producer: CoreLink, address: Address, raw: bytes) -> bool:
        consumers = address.consumers
        if address.remote:
            return False
        for out in consumers:
            if out.credit <= 0 or not out.strip_out:
                return False
        for out in consumers:
            pending_append((out, raw, None))
        address.counters.deliveries_ingress += 1
        # Every copy has left the router: the producer's credit comes back.
        copies_passed_on(consumers, producer, address)
        return True

    return multicast
