"""A graceful drain, as the event loop carries it out: listeners closed, new attaches refused,
clients' producers given no more credit, what the router holds counted, and at the end the
clients handed back. The router's drain (qdrouter/drain.py) decides when each step runs."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List

from ...core.links import CoreLink
from ..bindings.proton_ffi import lib, set_condition
from ..links.endpoint_listener import EndpointListener
from ..links.inter_router import INTER_ROUTER

if TYPE_CHECKING:
    from ..connections.connection import AmqpConnection
    from .server import AmqpServer

log = logging.getLogger("qdrouter.ROUTER")

# What an attach gets while the router drains: qdmesh's own condition, so that a client can
# tell it from a policy limit and attach elsewhere at once.
DRAINING_CONDITION = "qd:router-draining"
# What clients' connections are closed with at the end of the drain, as at any shutdown.
FORCED_CONDITION = "amqp:connection:forced"


@dataclass
class HandBack:
    """What handing the clients back did."""

    connections: int
    links: int
    given_up: int  # deliveries still unsettled, given their outcome (released or modified)
    routed: int = 0  # link-routed deliveries still unsettled: they go with their links' connections


class ServerDrain(EndpointListener):
    """The drain's steps on one AmqpServer."""

    def __init__(self, server: AmqpServer, description: str) -> None:
        self._server = server
        self._description = description
        self._refusing = False
        self.refused = 0  # attaches refused since the drain began
        server.endpoints.add_listener(self)

    # ---- phase 1: accept nothing new -------------------------------------------------------
    def stop_accepting(self) -> int:
        """Close the AMQP listeners, refuse new attaches, withhold clients' credit; returns the
        number of clients' producer links that get no more credit."""
        server = self._server
        for fd in list(server.listeners):
            server.close_listener(fd)
        self._refusing = True
        server.adaptor.stop_client_credit()
        link_router = server.endpoints.link_router
        if link_router is not None:
            link_router.stop_credit()  # link-routed producers too: what they hold may still come
        return sum(1 for link in self._client_links() if link.incoming)

    def hold_attach(self, connection: AmqpConnection, pn_link: Any) -> bool:
        return self._refuse(connection, pn_link)

    def edge_link_opened(self, connection: AmqpConnection, pn_link: Any) -> bool:
        return self._refuse(connection, pn_link)

    def routed_attach(self, connection: AmqpConnection, pn_link: Any) -> bool:
        return self._refuse(connection, pn_link)

    def _refuse(self, connection: AmqpConnection, pn_link: Any) -> bool:
        if not self._refusing:
            return False
        # Answered and detached at once, as AMQP requires of a refused attach.
        set_condition(lib.pn_link_condition(pn_link), DRAINING_CONDITION, self._description)
        lib.pn_link_open(pn_link)
        lib.pn_link_close(pn_link)
        self._server.adaptor.dirty.add(connection)
        self.refused += 1
        return True

    # ---- phase 3: what is in flight ------------------------------------------------------
    def unsettled(self) -> int:
        """Deliveries the router holds unsettled: each came in on one of its links (a
        link-routed one included) and has not had its outcome given back to its sender yet."""
        return self._held() + self._routed()

    def _held(self) -> int:
        return sum(len(link.unsettled) for link in self._server.adaptor.links.values() if link.incoming)

    def _routed(self) -> int:
        link_router = self._server.endpoints.link_router
        return int(link_router.unsettled()) if link_router is not None else 0

    def outcomes(self) -> int:
        """Outcomes consumers and other routers have given this router's deliveries so far
        (links gone included): the drain counts those it waited for."""
        server = self._server
        closed = server.endpoints.closed_link_counters
        total = closed.accepted + closed.rejected + closed.released + closed.modified
        for link in server.adaptor.links.values():
            if not link.incoming:
                counters = link.counters
                total += counters.accepted + counters.rejected + counters.released + counters.modified
        return total

    # ---- phase 4: the clients go elsewhere --------------------------------------------------
    def hand_back(self) -> HandBack:
        """Every sender hears the fate of what is still unsettled (modified if a consumer or
        another router was given it, released if not), then clients' connections close with
        amqp:connection:forced. Inter-router connections stay up (closed by the stop after)."""
        server = self._server
        given_up = self._held()
        clients = self.client_connections()
        links = sum(len(connection.links) for connection in clients)
        everyone = list(server.by_fd.values()) if given_up else clients
        for connection in everyone:
            server.endpoints.detach_consumers(connection)
        for connection in everyone:
            server.endpoints.release_waiting(connection)
        server.adaptor.flush_pending()
        for connection in clients:
            server.close_connection(connection, FORCED_CONDITION, self._description)
        return HandBack(len(clients), links, given_up, self._routed())

    def client_connections(self) -> List[AmqpConnection]:
        """Open connections other than inter-router ones (clients, edges, brokers)."""
        return [connection for connection in self._server.by_fd.values()
                if not connection.closed and connection.settings.role != INTER_ROUTER]

    def _client_links(self) -> List[CoreLink]:
        return [link for connection in self.client_connections() for link in connection.links.values()]
