"""The connection entity beyond its counters: the peer's open properties, and UPDATE, which
force-closes a connection (adminStatus: deleted) as qdrouterd's agent_connection.c does."""

from __future__ import annotations

import logging
from typing import Any, Dict, Tuple

from ..amqp.bindings.proton_ffi import ffi, lib
from ..amqp.codec.decoder import decode_value
from .messages import Request
from .status import OK, bad_request, forbidden, not_implemented

log = logging.getLogger("qdrouter.AGENT")

# qdrouterd's words for a refused force-close (scripts match them).
NOT_ALLOWED = "You are not allowed to perform this operation."
# An open's properties are at most one frame; a map bigger than this is not shown.
MAX_PROPERTIES_BYTES = 65536


def peer_properties(pn_connection: Any) -> Dict[str, Any]:
    """The properties of the peer's open (keys as strings), {} when it sent none."""
    data = lib.pn_connection_remote_properties(pn_connection)
    size = lib.pn_data_encoded_size(data)
    if size <= 0 or size > MAX_PROPERTIES_BYTES:
        return {}
    buffer = ffi.new("char[]", size)
    written = lib.pn_data_encode(data, buffer, size)
    if written <= 0:
        return {}
    try:
        properties, _ = decode_value(bytes(ffi.buffer(buffer, written)))
    except Exception:  # a peer's bytes: shown as none rather than failing the query
        return {}
    if not isinstance(properties, dict):
        return {}
    return {str(key): value for key, value in properties.items()}


def update(router: Any, request: Request, requester: Any, row_of: Any) -> Tuple[int, Any]:
    """UPDATE of a connection: ``adminStatus: deleted`` closes it (not an edge or inter-router
    connection one of its connectors made, and only if the requesting
    connection's policy group allows admin status updates); ``enabled`` leaves it as it is.
    ``row_of(connection)`` is its entity row."""
    body = request.body
    if not isinstance(body, dict) or ("adminStatus" not in body and "enableProtocolTrace" not in body):
        raise bad_request("Bad Request: UPDATE of a connection sets adminStatus (or enableProtocolTrace)")
    identity = request.properties.get("identity")
    if identity is None:
        raise bad_request("Bad Request: a connection is named by its identity")
    target = next((c for c in list(router.server.by_fd.values()) if str(c.identity) == str(identity)), None)
    if target is None:
        raise bad_request(f"Bad Request: no connection with identity {identity}")
    status = body.get("adminStatus")
    if status is None:
        raise not_implemented("connection: attribute 'enableProtocolTrace' is not supported by qdmesh")
    if status == "enabled":
        return OK, row_of(target)
    if status != "deleted":
        raise bad_request(f"Bad Request: connection: attribute 'adminStatus': {status!r} is not "
                          f"'enabled' or 'deleted'")
    # qdmesh: an inter-router or edge connection the router ACCEPTED may be closed (the
    # operator revokes a link from another cluster so: docs/multicluster.md); its own
    # connectors' connections may not, as in qdrouterd.
    if target.settings.role in ("inter-router", "edge") and target.client:
        raise forbidden(NOT_ALLOWED)
    grant = getattr(requester, "policy", None)
    group = getattr(grant, "group", None)
    if group is not None and not group.allow_admin_status_update:
        raise forbidden(NOT_ALLOWED)
    row = row_of(target)
    row["adminStatus"] = "deleted"
    log.info("Connection %s force-closed by request from connection %s", target.identity,
             getattr(requester, "identity", "?"))
    router.server.close_connection(target, "amqp:connection:forced", "Connection force-closed by management")
    return OK, row
