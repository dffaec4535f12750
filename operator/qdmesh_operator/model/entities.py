"""Router entities the operator wants on a router, and which live entities it owns.

Entities the operator changes at run time are named ``qdmesh/<kind>/<name>``
(``qdmesh/linkRoute/orders-in``, ``qdmesh/connector/broker``); those are the only ones the planner
ever deletes.  (The router names unnamed config entities ``<type>/<n>``, hence the prefix.)
The entities every
router needs from its first second (the amqp, inter-router and http listeners) have plain names
and live in the static part of the config file only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict

# Types the operator changes at run time, in the order they are created (a listener or
# connector before the routes that use it; deleted in the reverse order).
LIVE_TYPES = ("sslProfile", "listener", "connector", "address", "linkRoute", "autoLink", "vhost")

MANAGED_PREFIX = "qdmesh/"

# The router's management reports the long type names; the planner keys by config section.
LONG_TYPE = {
    "sslProfile": "org.apache.qpid.dispatch.sslProfile",
    "listener": "org.apache.qpid.dispatch.listener",
    "connector": "org.apache.qpid.dispatch.connector",
    "address": "org.apache.qpid.dispatch.router.config.address",
    "linkRoute": "org.apache.qpid.dispatch.router.config.linkRoute",
    "autoLink": "org.apache.qpid.dispatch.router.config.autoLink",
    "vhost": "org.apache.qpid.dispatch.vhost",
}

# Types whose attributes the router can change in place (the others are deleted and created),
# with the attributes that can only be set at creation.
UPDATABLE_TYPES = {"vhost": frozenset({"hostname"})}


def managed_name(kind: str, name: str) -> str:
    return f"{MANAGED_PREFIX}{kind}/{name}"


def is_managed(name: object) -> bool:
    return isinstance(name, str) and name.startswith(MANAGED_PREFIX)


@dataclass
class Entity:
    """One router entity: its config section (``linkRoute``), name and attributes (camelCase,
    values already in the router's types: str, int, bool, or a map for vhost groups)."""

    type: str
    name: str
    attributes: Dict[str, Any] = field(default_factory=dict)
    #: Only in the config file: needs something only a restart brings (a mounted Secret).
    restart_only: bool = False

    def key(self) -> str:
        return f"{self.type}:{self.name}"

    def describe(self) -> str:
        return f"{self.type} {self.name!r}"
