"""Inter-router connections' links: control (qd.router) and data (qd.router-data), one each
way. The connecting side attaches all four; the accepting side recognises them by their
capabilities. No routing decisions here."""

from __future__ import annotations

from typing import Any, Callable, List

from ...core.links import CONTROL, DATA, CoreLink
from ..bindings.proton_ffi import lib
from ..connections.connection import AmqpConnection
from .capabilities import CONTROL_CAPABILITY, DATA_CAPABILITY, capabilities, set_capability

INTER_ROUTER = "inter-router"
_KINDS = {CONTROL_CAPABILITY: CONTROL, DATA_CAPABILITY: DATA}
_LINKS = (
    ("qdlink.control.out", True, CONTROL_CAPABILITY),
    ("qdlink.control.in", False, CONTROL_CAPABILITY),
    ("qdlink.data.out", True, DATA_CAPABILITY),
    ("qdlink.data.in", False, DATA_CAPABILITY),
)


def link_kind(pn_link: Any) -> str | None:
    """CONTROL or DATA for a peer's inter-router link, from its termini's capabilities."""
    for terminus in (lib.pn_link_remote_source(pn_link), lib.pn_link_remote_target(pn_link)):
        for capability in capabilities(terminus):
            kind = _KINDS.get(capability)
            if kind is not None:
                return kind
    return None


def attach_links(connection: AmqpConnection, next_id: Callable[[], int]) -> List[CoreLink]:
    """The connecting router's side: open a session and the four links."""
    session = lib.pn_session(connection.pn_connection)
    connection.session_settings(session)
    lib.pn_session_open(session)
    links = []
    for name, sending, capability in _LINKS:
        encoded = name.encode()
        pn_link = lib.pn_sender(session, encoded) if sending else lib.pn_receiver(session, encoded)
        set_capability(lib.pn_link_source(pn_link), capability)
        set_capability(lib.pn_link_target(pn_link), capability)
        lib.pn_link_open(pn_link)
        links.append(make_link(next_id(), name, not sending, connection, pn_link, _KINDS[capability]))
    return links


def make_link(identity: int, name: str, incoming: bool, connection: AmqpConnection, pn_link: Any,
              kind: str) -> CoreLink:
    # Router annotations are the mesh's own: never stripped between routers.
    link = CoreLink(identity, name, incoming, None, connection, pn_link, False, False)
    link.kind = kind
    link.capacity = connection.settings.link_capacity
    return link
