"""What the rest of the router hears of connections and links, as EndpointHandler
(amqp/links/endpoints.py) sees them go by: a part subclasses EndpointListener, overrides what it
needs (the rest does nothing) and is added with ``EndpointHandler.add_listener``; any number
may listen.  The mesh hears of inter-router links, auto-links of connections opening, edge/
of its edges' links and of clients' attaches it may hold."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...core.links import CoreLink
    from ..connections.connection import AmqpConnection


class EndpointListener:
    def connection_opened(self, connection: AmqpConnection) -> None:
        """The peer opened ``connection`` (and the router answered)."""

    def connection_lost(self, connection: AmqpConnection) -> None:
        """``connection`` is going and every link of it has left the core."""

    def inter_router_link_attached(self, link: CoreLink) -> None:
        """An inter-router link (control or data) is in the core."""

    def inter_router_link_lost(self, link: CoreLink) -> None:
        """An inter-router link has left the core."""

    def edge_link_opened(self, connection: AmqpConnection, pn_link: Any) -> bool:
        """An edge connection's peer attached ``pn_link``: True when the listener took it
        (then no one else looks at it)."""
        return False

    def edge_link_attached(self, connection: AmqpConnection, link: CoreLink) -> None:
        """A link of an edge connection is in the core, as an ordinary link."""

    def hold_attach(self, connection: AmqpConnection, pn_link: Any) -> bool:
        """A client attached ``pn_link``: True when the listener holds the attach (and
        answers it later); then no one else looks at it now."""
        return False

    def routed_attach(self, connection: AmqpConnection, pn_link: Any) -> bool:
        """Another router passed on a link-routed attach over an inter-router connection:
        True when the listener answered it (then it is not routed on)."""
        return False

    def link_gone(self, pn_link: Any) -> None:
        """The peer detached or closed ``pn_link``."""
