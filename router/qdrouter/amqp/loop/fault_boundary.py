"""The router's fault boundary: no client, peer or request can stop the router.

An exception out of the handling of one connection's work (an event, a delivery, a control
message, a management request, its socket's read or write, its release) closes that
connection with `amqp:internal-error` and a one-line description, is logged once at error
level with its traceback (naming the connection and, where known, the link) and counted
(the `router` entity's `internalErrorCount`, /metrics' `qdmesh_internal_errors_total`). The
event loop (amqp/loop/server.py) then resumes where it was: the rest of the batch, the other
connections. A failure that names no connection (a sweep of the core, a timer, an HTTP
request) is logged and counted, and the loop carries on.

The `try` blocks that lead here sit around a batch of events and around each connection's
socket work, not around each message: on CPython 3.11 and PyPy a `try` costs nothing until
something raises (docs/architecture.md, "The fault boundary", with the measurements).
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any, Dict, Tuple

from ..bindings import proton_ffi as pn
from ..bindings.proton_ffi import c_string, lib
from ..bindings.proton_shim import QD_INCOMING_DELIVERY

if TYPE_CHECKING:
    from ..connections.connection import AmqpConnection
    from .server import AmqpServer

log = logging.getLogger("qdrouter.SERVER")

INTERNAL_ERROR = "amqp:internal-error"
# A description is one line, and short: it travels in the close frame.
_DESCRIPTION_LIMIT = 200

_EVENT_NAMES: Dict[int, str] = {
    pn.DELIVERY: "a delivery",
    QD_INCOMING_DELIVERY: "a delivery",
    pn.LINK_FLOW: "a flow",
    pn.CONNECTION_REMOTE_OPEN: "an open",
    pn.CONNECTION_REMOTE_CLOSE: "a close",
    pn.SESSION_REMOTE_OPEN: "a begin",
    pn.SESSION_REMOTE_CLOSE: "an end",
    pn.LINK_REMOTE_OPEN: "an attach",
    pn.LINK_REMOTE_CLOSE: "a detach",
    pn.LINK_REMOTE_DETACH: "a detach",
    pn.TRANSPORT_ERROR: "a transport error",
}


def one_line(error: BaseException) -> str:
    """The exception as a close frame's description: its type and first line, bounded."""
    text = str(error).strip().splitlines()
    described = f"internal error: {type(error).__name__}" + (f": {text[0]}" if text else "")
    return described[:_DESCRIPTION_LIMIT]


class FaultBoundary:
    """Where the event loop's `except` blocks go. Each method is called inside one, so the
    exception being handled is the one logged."""

    def __init__(self, server: AmqpServer) -> None:
        self.server = server
        # Failures contained since the router started (never goes down).
        self.count = 0
        # Connections closed for a failure: a second failure of one drops it at once (its
        # close handshake may be what fails) and is not logged with a traceback again.
        self._failed: weakref.WeakSet[AmqpConnection] = weakref.WeakSet()

    # ---- failures with a connection to blame -------------------------------------------
    def event_failed(self, kind: int, item: Any, link_key: Any, error: BaseException) -> None:
        """Handling one event of a batch raised ``error``: ``item`` is the delivery (delivery
        events, with their link's key) or the event itself, as the batch gave them."""
        connection, link_name = self._blame(kind, item, link_key)
        doing = f"handling {_EVENT_NAMES.get(kind, f'event {kind}')}"
        if connection is None:
            self.unattributed(doing)
        else:
            self.connection_failed(connection, doing, error, link_name)

    def raw_event_failed(self, event: Any, error: BaseException) -> None:
        """As event_failed, for an event still in the collector (the slow path)."""
        try:
            kind = int(lib.pn_event_type(event))
        except Exception:
            kind = -1
        self.event_failed(kind, event, None, error)

    def connection_failed(self, connection: AmqpConnection, doing: str, error: BaseException,
                          link_name: str | None = None) -> None:
        """Close ``connection`` with amqp:internal-error: ``doing`` its work raised ``error``."""
        description = one_line(error)
        direction = "to" if connection.client else "from"
        if connection in self._failed:
            log.error("Connection %d %s %s failed again %s (%s): dropped", connection.identity, direction,
                      connection.peer, doing, description)
            self.server.drop_connection(connection, f"{INTERNAL_ERROR}: {description}")
            return
        self._failed.add(connection)
        self.count += 1
        on_link = f", link {link_name!r}" if link_name else ""
        log.error("Internal error %s on connection %d %s %s%s: closing it with %s",
                  doing, connection.identity, direction, connection.peer, on_link, INTERNAL_ERROR,
                  exc_info=True)
        connection.last_error = f"{INTERNAL_ERROR}: {description}"
        try:
            self.server.close_connection(connection, INTERNAL_ERROR, description)
        except Exception as second:  # its state is too broken to close: drop the socket
            log.error("Connection %d could not be closed after an internal error (%s): dropped",
                      connection.identity, one_line(second))
            self.server.drop_connection(connection, f"{INTERNAL_ERROR}: {description}")

    def release_failed(self, connection: AmqpConnection) -> None:
        """Releasing a finished connection raised: counted and logged; the server forgets it."""
        self.count += 1
        log.error("Internal error releasing connection %d %s %s: forgotten", connection.identity,
                  "to" if connection.client else "from", connection.peer, exc_info=True)

    # ---- failures without one ----------------------------------------------------------
    def unattributed(self, doing: str) -> None:
        """A failure no connection can be blamed for: logged, counted, and the loop goes on."""
        self.count += 1
        log.error("Internal error %s (no connection to close): carrying on", doing, exc_info=True)

    # ---- who was being served ----------------------------------------------------------
    def _blame(self, kind: int, item: Any, link_key: Any) -> Tuple[AmqpConnection | None, str | None]:
        """The connection (and link name) an event of a batch belongs to, found from what the
        batch gave: a delivery's link by its key, else proton's own pointers."""
        server = self.server
        try:
            if kind in (pn.DELIVERY, QD_INCOMING_DELIVERY) and link_key is not None:
                link = server.adaptor.links.get(link_key)
                if link is not None and link.connection is not None:
                    return link.connection, link.name
                pn_link = lib.pn_delivery_link(item)
                name = c_string(lib.pn_link_name(pn_link)) if pn_link else None
                pn_connection = lib.pn_session_connection(lib.pn_link_session(pn_link)) if pn_link else None
            else:
                pn_connection = lib.pn_event_connection(item)
                pn_link = lib.pn_event_link(item)
                name = c_string(lib.pn_link_name(pn_link)) if pn_link else None
            if not pn_connection:
                return None, name
            return server.endpoints.connections.get(pn_connection), name
        except Exception:  # finding the culprit must not be a second failure
            return None, None
