"""The names and identities qdrouterd 1.19 gives configuration entities that are not given
them, so that scripts naming entities (``qdmanage delete --name listener/0.0.0.0:5672``) work
on either router. From its agent.py: identity is ``TYPE/IDENTIFIER`` and an unnamed entity is
named after its identity; listeners and connectors are identified by ``host:port`` (and
``:name`` when named), SSL profiles and auth plugins by name, vhosts by hostname, logs by
module. The router core's entities (address, linkRoute, autoLink, exchange, binding) are
numbered by the core, one count for all of them, and an unnamed one is ``SECTION/N``, N
counting per type from 0."""

from __future__ import annotations

import itertools
from typing import Any, Dict, Iterator, Tuple

from ..schema import EntityTypeDef

_BY_HOST_PORT = ("listener", "connector")
_BY_NAME = ("sslProfile", "authServicePlugin")
_BY_ATTRIBUTE = {"vhost": "hostname", "log": "module", "router": "id"}
_CORE_TYPES = ("router.config.address", "router.config.linkRoute", "router.config.autoLink",
               "router.config.exchange", "router.config.binding")


class EntityNames:
    """Default identities and names, in the order entities are made (as the C router)."""

    def __init__(self) -> None:
        self._core_numbers = itertools.count(1)
        self._per_core_type: Dict[str, Iterator[int]] = {}
        self._others = itertools.count(1)

    def assign(self, etype: EntityTypeDef, attributes: Dict[str, Any]) -> Tuple[str, str]:
        """(identity, name) for a new entity of ``etype`` with ``attributes``."""
        given = attributes.get("name")
        name = str(given) if given else None
        kind = etype.short_name
        if kind in _CORE_TYPES:
            identity = str(next(self._core_numbers))
            section = kind.rsplit(".", 1)[-1]
            numbers = self._per_core_type.setdefault(kind, itertools.count(0))
            return identity, name or f"{section}/{next(numbers)}"
        identity = f"{kind}/{self._identifier(kind, attributes, name)}"
        return identity, name or identity

    def _identifier(self, kind: str, attributes: Dict[str, Any], name: str | None) -> str:
        if kind in _BY_HOST_PORT:
            host_port = f"{attributes.get('host') or ''}:{attributes.get('port')}"
            return f"{host_port}:{name}" if name else host_port
        if kind in _BY_NAME and name:
            return name
        attribute = _BY_ATTRIBUTE.get(kind)
        if attribute is not None and attributes.get(attribute):
            return str(attributes[attribute])
        return str(next(self._others))
