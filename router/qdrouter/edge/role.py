"""What a router's mode makes of edges: an edge router's uplink, or an interior router's
hub and address-lookup server; nothing for a standalone router."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..amqp.links.endpoint_listener import EndpointListener
from .hub import EdgeHub
from .lookup_server import LookupServer
from .seams import EdgeHost, PnObject
from .terms import EDGE
from .uplink import EdgeUplink

if TYPE_CHECKING:
    from ..amqp.connections.connection import AmqpConnection, ListenerSettings
    from ..amqp.links.endpoints import EndpointHandler
    from .lookup_client import LookupClient


class EdgeRole:
    def __init__(self, router: EdgeHost) -> None:
        self.mode = router.mode
        self.uplink: EdgeUplink | None = None
        self.hub: EdgeHub | None = None
        self.lookup: LookupServer | None = None
        server = router.server
        endpoints = server.endpoints
        forwarder = server.adaptor.forwarder
        if router.mode == "edge":
            # Dynamic addresses name this edge: the interior routes _edge/<id>/... to it.
            endpoints.dynamic_prefix = f"_edge/{router.id}/temp."
            server.adaptor.edge_router = True
            self.uplink = EdgeUplink(router.id, endpoints, forwarder, server.timers)
            endpoints.add_listener(_HeldAttaches(endpoints, self.uplink.lookup))
        elif router.mode == "interior":
            self.hub = EdgeHub(endpoints, forwarder)
            endpoints.add_listener(self.hub)
            self.lookup = LookupServer(forwarder, router.link_routes,
                                       lambda route, incoming: router.route_container(route) is not None)

    def settings(self, settings: ListenerSettings) -> None:
        """Edge connections carry router annotations as qdrouterd's do: read on both sides,
        x-opt-qd.to both ways, ingress and trace only from the interior (inbound.annotated)."""
        if settings.role == EDGE:
            settings.strip_in = False
            settings.strip_out = False


class _HeldAttaches(EndpointListener):
    """Clients' attaches on an edge router wait for the interior's link-route lookup; an
    attach the edge serves itself goes through link_opened again, past the lookup."""

    def __init__(self, endpoints: EndpointHandler, lookup: LookupClient) -> None:
        self.endpoints = endpoints
        self.lookup = lookup

    def hold_attach(self, connection: AmqpConnection, pn_link: PnObject) -> bool:
        return pn_link not in self.lookup.resuming and self.lookup.hold(connection, pn_link)

    def link_gone(self, pn_link: PnObject) -> None:
        self.lookup.forget(pn_link)

    def connection_lost(self, connection: AmqpConnection) -> None:
        self.lookup.connection_lost(connection)
