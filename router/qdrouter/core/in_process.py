"""Messages for in-process nodes (the management agent, an edge's address lookups): the
node's handler gives the outcome at once. A message still arriving (streamed, routed by its
head) is handed over only once the adaptor has read it whole (amqp/data_path/whole_reads.py), so a
node never sees half a request.

A mixin of the Forwarder, which gives it ``io`` and ``release_credit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .address_table import Address
from .links import CoreLink, InFlight

if TYPE_CHECKING:
    from .forwarder import DeliveryIO


class InProcessNodes:
    io: DeliveryIO

    def release_credit(self, link: CoreLink) -> None:
        raise NotImplementedError

    def _to_handler(self, address: Address, message: InFlight) -> None:
        counters = address.counters
        counters.deliveries_ingress += 1
        counters.deliveries_to_container += 1
        handler: Callable[[InFlight], int] = address.handler  # type: ignore[assignment]
        if message.streamed:
            # Routed by its head while the rest arrives: the node needs all of it.
            self.io.read_whole(message, lambda whole: self._handle(handler, message, whole))
        else:
            self._handle(handler, message, True)

    def _handle(self, handler: Callable[[InFlight], int], message: InFlight, whole: bool) -> None:
        if whole:
            outcome = handler(message)
            if not message.settled:
                self.io.finish_incoming(message, outcome)
        self.release_credit(message.in_link)
