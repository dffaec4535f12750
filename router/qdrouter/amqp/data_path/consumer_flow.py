"""Consumers' credit: what a consumer grants (its flow frames), and what it gets back when
its connection's output drains after being blocked (amqp/data_path/outbound.py).

A mixin of DeliveryAdaptor (amqp/data_path/deliveries.py), which gives it the attributes declared here.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Set

from ...core.forwarder import Forwarder
from ...core.links import CoreLink, InFlight
from ..bindings.proton_ffi import lib
from .seams import RoutedLinks
from .streaming import Streams
from .waiting_producers import WaitingProducers


class ConsumerFlow:
    forwarder: Forwarder
    dirty: Set[Any]
    outgoing: Dict[Any, InFlight]
    waiting: WaitingProducers
    streams: Streams
    link_router: RoutedLinks | None
    flush_pending: Callable[[], None]

    def flush_credit(self) -> None:
        raise NotImplementedError

    def on_flow(self, link: CoreLink) -> None:
        if link.incoming or link.connection.retiring:
            return  # a retiring connection's consumers take nothing new (amqp/connections/tls_rotation.py)
        handle = link.handle
        if self.streams.busy(link):
            return  # it carries a streamed message: its credit is read when that ends
        if link.connection.out_blocked:
            # Its connection's output is full: the credit waits for the socket to take it
            # (resume_consumer). Drained meanwhile means "nothing to send now".
            link.blocked = True  # (a link attached since the connection was blocked)
            if lib.pn_link_get_drain(handle):
                lib.pn_link_drained(handle)
            self.dirty.add(link.connection)
            return
        self.forwarder.consumer_credit(link, lib.pn_link_credit(handle))
        if link.credit > 0 and link.address is not None and self.waiting.by_address:
            self.waiting.resume(link.address)
        if link.credit > 0 and lib.pn_link_get_drain(handle):
            # Drained means "nothing more to send": the sends just decided must go first.
            self.flush_pending()
            lib.pn_link_drained(handle)
            link.credit = lib.pn_link_credit(handle)
        self.dirty.add(link.connection)

    def resume_consumer(self, link: CoreLink) -> None:
        """``link``'s connection is no longer blocked: its credit (proton's count) is usable
        again, and what waited for it moves."""
        if self.streams.resumed(link):
            return  # the rest of a streamed message goes first
        if link.connection.retiring:
            return  # it finishes what it carries, nothing new (amqp/connections/tls_rotation.py)
        self.forwarder.consumer_credit(link, lib.pn_link_credit(link.handle))
        if link.credit > 0 and link.address is not None and self.waiting.by_address:
            self.waiting.resume(link.address)
        self.dirty.add(link.connection)

    def connection_unblocked(self, connection: Any) -> None:
        """``connection`` takes output again: link-routed streams held for it go on."""
        if self.link_router is not None:
            self.link_router.streams.resume()

    def flush_now(self) -> None:
        """The sends and producer credit decided so far, into proton now."""
        self.flush_pending()
        self.flush_credit()

    def drop_outgoing(self, link: CoreLink) -> None:
        """An outgoing link is going (its deliveries with it): forget its deliveries."""
        self.streams.consumer_gone(link)
        outgoing = self.outgoing
        for key in link.unsettled:
            outgoing.pop(key, None)
