"""A transport's error (PN_TRANSPORT_ERROR): kept as its connection's last error (management
shows it) and logged."""

from __future__ import annotations

import logging
from typing import Any, Dict

from ..bindings.proton_ffi import c_string, lib
from ..connections.connection import AmqpConnection

log = logging.getLogger("qdrouter.SERVER")


def transport_error(connections: Dict[Any, AmqpConnection], event: Any) -> None:
    transport = lib.pn_event_transport(event)
    condition = lib.pn_transport_condition(transport)
    if not lib.pn_condition_is_set(condition):
        return
    name = c_string(lib.pn_condition_get_name(condition))
    description = c_string(lib.pn_condition_get_description(condition))
    connection = connections.get(lib.pn_transport_connection(transport))
    if connection is not None:
        connection.last_error = f"{name}: {description}"
    log.info("Connection error: %s: %s", name, description)
