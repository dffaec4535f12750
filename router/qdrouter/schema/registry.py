"""All entity types, and finding one by any of its names."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from . import (
    entities_connections,
    entities_operational,
    entities_policy,
    entities_router,
    entities_routing,
)
from .types import EntityTypeDef, SchemaError, UnknownEntityType, camel_case, closest_name

_ALL = (
    *entities_router.TYPES,
    *entities_connections.TYPES,
    *entities_routing.TYPES,
    *entities_policy.TYPES,
    *entities_operational.TYPES,
)

#: Every entity type, keyed by long name, in a stable order (configuration types first).
ENTITY_TYPES: Mapping[str, EntityTypeDef] = MappingProxyType(
    {t.long_name: t for t in sorted(_ALL, key=lambda t: t.config_section is None)}
)

#: Configuration entity types keyed by their qdrouterd.conf section name.
CONFIG_SECTIONS: Mapping[str, EntityTypeDef] = MappingProxyType(
    {t.config_section: t for t in ENTITY_TYPES.values() if t.config_section is not None}
)


def _build_index() -> dict[str, EntityTypeDef]:
    index: dict[str, EntityTypeDef] = {}
    for t in ENTITY_TYPES.values():
        for key in (t.long_name, t.short_name, t.config_section):
            if key is None:
                continue
            if key in index and index[key] is not t:
                raise SchemaError(f"entity type name {key!r} is ambiguous")
            index[key] = t
    return index


_BY_NAME = _build_index()


def entity_type(name: str) -> EntityTypeDef:
    """The entity type called `name`: long name, short name or config section name.

    The hyphenated section spellings (ssl-profile, link-route) are accepted too.
    Raises UnknownEntityType (a KeyError and a SchemaError) naming the closest match.
    """
    found = _BY_NAME.get(name) or _BY_NAME.get(camel_case(name))
    if found is not None:
        return found
    hint = closest_name(name, list(_BY_NAME))
    suffix = f" (did you mean {hint!r}?)" if hint else ""
    raise UnknownEntityType(f"unknown entity type {name!r}{suffix}")


def config_section_names() -> list[str]:
    """Section names a config file may use, in schema order."""
    return list(CONFIG_SECTIONS)
