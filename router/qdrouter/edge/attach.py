"""Links a router attaches itself on an edge connection (both sides use them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..amqp.bindings.proton_ffi import lib
from ..amqp.links.capabilities import set_capability
from ..core.links import CoreLink
from .seams import PnObject

if TYPE_CHECKING:
    from ..amqp.connections.connection import AmqpConnection
    from ..amqp.links.endpoints import EndpointHandler


def open_link(endpoints: EndpointHandler, connection: AmqpConnection, session: PnObject, name: str,
              incoming: bool, source: str | None, target: str | None, key: str | None,
              capabilities: Sequence[str] = ()) -> CoreLink:
    """Attach a link on ``connection`` (``incoming``: a receiver) and register it with the
    adaptor, not yet with the forwarder (the caller binds it as it needs)."""
    encoded = name.encode()
    pn_link = lib.pn_receiver(session, encoded) if incoming else lib.pn_sender(session, encoded)
    if source is not None:
        lib.pn_terminus_set_address(lib.pn_link_source(pn_link), source.encode())
    if target is not None:
        lib.pn_terminus_set_address(lib.pn_link_target(pn_link), target.encode())
    for capability in capabilities:
        set_capability(lib.pn_link_source(pn_link), capability)
        set_capability(lib.pn_link_target(pn_link), capability)
    lib.pn_link_open(pn_link)
    settings = connection.settings
    link = CoreLink(endpoints.new_link_id(), name, incoming, key, connection, pn_link,
                    settings.strip_in, settings.strip_out)
    link.capacity = settings.link_capacity
    link.via_edge = True
    endpoints.register(connection, link)
    endpoints.adaptor.dirty.add(connection)
    return link


def close_link(endpoints: EndpointHandler, link: CoreLink) -> None:
    """Detach a link the router attached (it leaves the core first)."""
    handle = link.handle
    if handle is None:
        return
    endpoints.link_closed_locally(link)
    lib.pn_link_close(handle)
    endpoints.adaptor.dirty.add(link.connection)
