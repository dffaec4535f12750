"""The edge router's address proxy (qdrouterd: modules/edge_router/addr_proxy.c).

While an edge connection is active, for each mobile address:
- with a local consumer (not the interior's own link): a receiving link from the interior
  with that address as source, so the network routes the address here;
- with a local producer: a sending link to the interior with that address as target,
  bound as one more consumer of the address only while the interior's address tracking
  says a consumer exists elsewhere (so nothing goes up that nobody takes).
The proxy's own links are on the edge connection and never count as local.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Dict, Tuple

from ..core.address_events import AddressListener
from ..core.address_table import Address, split_phase
from ..core.links import CoreLink, InFlight
from ..core.mesh_routes import is_mobile
from ..core.outcomes import ACCEPTED, REJECTED
from .attach import close_link, open_link
from .seams import PnObject
from .terms import core_key, read_tracking, waypoint_capability

if TYPE_CHECKING:
    from ..amqp.connections.connection import AmqpConnection
    from ..amqp.links.endpoints import EndpointHandler
    from ..core.forwarder import Forwarder

log = logging.getLogger("qdrouter.ROUTER_CORE")


class AddressProxy(AddressListener):
    def __init__(self, endpoints: EndpointHandler, forwarder: Forwarder) -> None:
        self.endpoints = endpoints
        self.forwarder = forwarder
        self.connection: AmqpConnection | None = None
        self.session: PnObject = None
        # address key -> the proxy's links on the active edge connection
        self.inlinks: Dict[str, CoreLink] = {}
        self.outlinks: Dict[str, CoreLink] = {}
        # Addresses the interior said have a consumer elsewhere.
        self.reachable: Dict[str, bool] = {}
        self._busy = False

    def activate(self, connection: AmqpConnection, session: PnObject) -> None:
        self.connection, self.session = connection, session
        for address in self.forwarder.table:
            self.address_changed(address)

    def deactivate(self) -> None:
        """The connection went (its links with it, already out of the core)."""
        self.connection = self.session = None
        self.inlinks.clear()
        self.outlinks.clear()
        self.reachable.clear()

    # ---- keeping the proxy links in step ---------------------------------------------------
    def address_changed(self, address: Address) -> None:
        connection = self.connection
        if connection is None or self._busy or address.handler is not None:
            return
        key = address.key
        if not is_mobile(key) or key.startswith("_edge/"):
            return
        self._busy = True  # attaching and detaching here changes the address again
        try:
            wants_in = any(link.connection is not connection for link in address.consumers)
            wants_out = any(link.connection is not connection for link in address.producers)
            self._keep_in(connection, address, wants_in)
            self._keep_out(connection, address, wants_out)
        finally:
            self._busy = False

    def _keep_in(self, connection: AmqpConnection, address: Address, wanted: bool) -> None:
        key = address.key
        link = self.inlinks.get(key)
        if wanted and link is None:
            plain, caps = self._terminus(key, False)
            link = open_link(self.endpoints, connection, self.session,
                             f"qdlink.edge.in.{self.endpoints.new_link_id()}", True, plain, None, key, caps)
            self.inlinks[key] = link
            self.forwarder.producer_attached(link)
        elif not wanted and link is not None:
            del self.inlinks[key]
            close_link(self.endpoints, link)

    def _keep_out(self, connection: AmqpConnection, address: Address, wanted: bool) -> None:
        key = address.key
        link = self.outlinks.get(key)
        if wanted and link is None:
            plain, caps = self._terminus(key, True)
            link = open_link(self.endpoints, connection, self.session,
                             f"qdlink.edge.out.{self.endpoints.new_link_id()}", False, None, plain, key, caps)
            self.outlinks[key] = link
            link.address = address  # known, not yet a consumer: see tracking_update
            if self.reachable.get(key):
                self._bind(link, address)
        elif not wanted and link is not None:
            del self.outlinks[key]
            self.reachable.pop(key, None)
            close_link(self.endpoints, link)

    def _terminus(self, key: str, outgoing: bool) -> Tuple[str, Tuple[str, ...]]:
        """The proxy link's address, and its waypoint capability for a phased address."""
        plain, phase = split_phase(key)
        in_phase, out_phase = self.forwarder.table.phases_of(plain)
        if out_phase <= 0:
            return plain, ()  # not a multi-phase address: a plain client link
        capability = waypoint_capability(phase, outgoing, in_phase, out_phase)
        return plain, (capability,) if capability else ()

    # ---- address tracking ----------------------------------------------------------------
    def tracking_update(self, message: InFlight) -> int:
        """[hash key, bool] from the interior: bind or unbind that address's sending link."""
        try:
            update = read_tracking(message.raw)
        except Exception:  # malformed: rejected, as qdrouterd does
            update = None
        if update is None:
            log.error("Edge Address Proxy: received an invalid message body, rejecting")
            return REJECTED
        key = core_key(update[0])
        if key is None:
            return ACCEPTED
        reachable = update[1]
        self.reachable[key] = reachable
        link = self.outlinks.get(key)
        address = self.forwarder.table.find(key)
        if link is not None and address is not None and link.handle is not None:
            if reachable:
                self._bind(link, address)
            else:
                self._unbind(link, address)
        return ACCEPTED

    def _bind(self, link: CoreLink, address: Address) -> None:
        if link in address.consumers:
            return
        address.consumers.append(link)
        self.forwarder.address_became_routable(address)
        self.forwarder.consumer_credit(link, link.credit)  # what waited for a consumer
        self.endpoints.adaptor.waiting.resume(address)  # and what waits unread in proton

    def _unbind(self, link: CoreLink, address: Address) -> None:
        if link in address.consumers:
            address.consumers.remove(link)
