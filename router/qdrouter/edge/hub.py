"""An interior router's side of its edge connections (qdrouterd: the edge-downlink link
type in router_core/connections.c, modules/edge_addr_tracking/).

Edge routers' links are client links but for two kinds:
- the downlink (a receiving link whose source has the capability qd.router-edge-downlink
  and the edge's id as address): the consumer of ``_edge/<edge id>``, which the mesh
  advertises like a mobile address ("H<edge id>" upstream), so a reply to an edge client's
  dynamic address ``_edge/<edge id>/temp.*`` is routed there from any router;
- the address-tracking link (source ``_$qd.edge_addr_tracking``): the router tells the edge,
  for each address it produces to (its sending links), whether a consumer exists other than
  on that edge, so the edge sends only what someone takes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Dict

from ..amqp.bindings.proton_ffi import c_string, lib, terminus_address, terminus_key
from ..amqp.links.capabilities import capabilities
from ..amqp.links.endpoint_listener import EndpointListener
from ..core.address_events import AddressListener
from ..core.address_table import Address, phased
from ..core.links import CoreLink, InFlight
from ..policy import ConnectionGrant
from .seams import PnObject
from .terms import (
    DOWNLINK_CAPABILITY,
    EDGE,
    TRACKING_ADDRESS,
    summary_key,
    tracking_message,
    waypoint_ordinal,
)

if TYPE_CHECKING:
    from ..amqp.connections.connection import AmqpConnection
    from ..amqp.links.endpoints import EndpointHandler
    from ..core.forwarder import Forwarder

log = logging.getLogger("qdrouter.ROUTER_CORE")


class _EdgeState:
    """One edge connection: its tracking link and what it was last told per address."""

    __slots__ = ("edge_id", "told", "tracking")

    def __init__(self) -> None:
        self.tracking: CoreLink | None = None
        self.told: Dict[str, bool] = {}
        self.edge_id: str | None = None


class EdgeHub(EndpointListener, AddressListener):
    def __init__(self, endpoints: EndpointHandler, forwarder: Forwarder) -> None:
        self.endpoints = endpoints
        self.forwarder = forwarder
        self.edges: Dict[AmqpConnection, _EdgeState] = {}
        # Tracking updates come "from" this in-process endpoint (never answered).
        self.origin = CoreLink(0, "edge-address-tracking", True, None, None, None)
        # An interior router has no uplink (core/address_events.py's AddressResolver).
        self.uplink_address: Address | None = None
        forwarder.add_address_listener(self)
        forwarder.resolve_with(self)

    # ---- links of edge connections ------------------------------------------------------
    def edge_link_opened(self, connection: AmqpConnection, pn_link: PnObject) -> bool:
        """Handle an edge's attach of the two special kinds; False for any other link."""
        incoming = bool(lib.pn_link_is_receiver(pn_link))
        terminus = lib.pn_link_remote_target(pn_link) if incoming else lib.pn_link_remote_source(pn_link)
        ordinal = waypoint_ordinal(capabilities(terminus))
        address = terminus_key(terminus)  # keyed as the endpoints' addresses are
        if ordinal and address:
            # An edge's proxy link for a waypoint phase (qdrouterd: address_lookup_client.c,
            # "override the configured phases and use the waypoint phases").
            self._attach(connection, pn_link, phased(address, ordinal if incoming else ordinal - 1), incoming)
            return True
        if incoming:
            return False  # the edge sends: a client-like producer link
        source = lib.pn_link_remote_source(pn_link)
        address = terminus_address(source)
        if DOWNLINK_CAPABILITY in capabilities(source) and address:
            self._attach(connection, pn_link, "_edge/" + address)
            self._state(connection).edge_id = address
            log.info("Edge router %s attached (connection %d)", address, connection.identity)
            return True
        if address == TRACKING_ADDRESS:
            state = self._state(connection)
            link = self._attach(connection, pn_link, f"_local/_edge_tracking/{connection.identity}")
            state.tracking = link
            state.told.clear()
            for other in list(connection.links.values()):
                if other.incoming and other.address is not None:
                    self.address_changed(other.address)
            return True
        return False

    def _attach(self, connection: AmqpConnection, pn_link: PnObject, key: str,
                incoming: bool = False) -> CoreLink:
        settings = connection.settings
        name = c_string(lib.pn_link_name(pn_link)) or ""
        link = CoreLink(self.endpoints.new_link_id(), name, incoming, key, connection, pn_link,
                        settings.strip_in, settings.strip_out)
        link.via_edge = True
        link.capacity = settings.link_capacity
        self.endpoints.register(connection, link)
        self.police(connection, link)
        lib.pn_link_open(pn_link)
        if incoming:
            self.forwarder.producer_attached(link)
        else:
            self.forwarder.consumer_attached(link)
        self.endpoints.adaptor.dirty.add(connection)
        return link

    def edge_link_attached(self, connection: AmqpConnection, link: CoreLink) -> None:
        self.police(connection, link)

    def police(self, connection: AmqpConnection, link: CoreLink) -> None:
        """The policy's global maxMessageSize applies to what edges send their interior router
        (the reference: "applied to transfers over user connections and to transfers to
        interior routers from edge routers"); with vhost policy on, an edge connection is
        policed as a user connection is, by its vhost's group (amqp/links/policing.py)."""
        policer = self.endpoints.policer
        if policer is None or not link.incoming:
            return
        if connection.policy is not None:
            policer.watch_messages(connection, link)
            return
        limit = policer.engine.max_message_size
        if limit > 0:
            grant = ConnectionGrant("", f"edge {connection.remote_container}", connection.peer,
                                    None, None, limit)
            self.endpoints.adaptor.policed[link.handle] = grant

    def _state(self, connection: AmqpConnection) -> _EdgeState:
        state = self.edges.get(connection)
        if state is None:
            state = self.edges[connection] = _EdgeState()
        return state

    def connection_lost(self, connection: AmqpConnection) -> None:
        self.edges.pop(connection, None)

    def edge_ids(self) -> Dict[AmqpConnection, str]:
        """Connection -> edge router id, for the edges attached here."""
        return {conn: state.edge_id for conn, state in self.edges.items() if state.edge_id}

    # ---- routing ---------------------------------------------------------------------------
    def unknown_address(self, key: str | None, message: InFlight) -> Address | None:
        """``_edge/<id>/...``: toward that edge, through its downlink (here, or on the
        interior router the mesh says it is attached to)."""
        address = self.alias(key) if key else None
        return address if address is not None and address.routable() else None

    def alias(self, key: str) -> Address | None:
        """The edge-summary address ``_edge/<id>`` that carries ``_edge/<id>/...``."""
        summary = summary_key(key)
        if summary is None or summary == key:
            return None
        return self.forwarder.table.find(summary)

    # ---- address tracking -----------------------------------------------------------------
    def address_changed(self, address: Address) -> None:
        if not self.edges:
            return
        for producer in address.producers:
            connection = producer.connection
            if connection is None or connection.settings.role != EDGE:
                continue
            state = self.edges.get(connection)
            if state is None or state.tracking is None or state.tracking.handle is None:
                continue
            reachable = bool(address.remote) or any(
                consumer.connection is not connection for consumer in address.consumers)
            if state.told.get(address.key, False) != reachable:
                state.told[address.key] = reachable
                self._tell(state.tracking, address.key, reachable)

    def _tell(self, link: CoreLink, key: str, reachable: bool) -> None:
        payload = tracking_message(key, reachable)
        message = InFlight(payload, payload, self.origin, None, True)
        forwarder = self.forwarder
        if link.credit > 0:
            forwarder.send(link, message, True)
        else:
            message.copies_pending = 1  # sent, in order, when the edge grants credit
            link.backlog.append(message)

