"""The types edge/ meets at its seams, so that mypy checks what crosses them: the router that
takes an edge role (as much of it as edge/ reads), and proton's objects, which edge/ only
hands back to proton or to amqp/ (cffi pointers: opaque here, named for what they are)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..amqp.connections.connection import AmqpConnection
    from ..amqp.loop.server import AmqpServer
    from ..core.link_route_table import LinkRoute, LinkRouteTable

#: A proton-C object (pn_session_t *, pn_link_t *) as cffi hands it out.
PnObject = Any


class EdgeHost(Protocol):
    """What an edge role needs of the router that has it (qdrouter.router.Router)."""

    @property
    def mode(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def server(self) -> AmqpServer: ...

    @property
    def link_routes(self) -> LinkRouteTable: ...

    def route_container(self, route: LinkRoute) -> AmqpConnection | None: ...
