"""qdmesh's management schema: every entity type, its attributes and operations.

The single source of truth for what the config file and the management agent accept.
"""

from __future__ import annotations

from .attributes import CREATE, UPDATE, Problem, Validated
from .coerce import InvalidValue, coerce_value
from .registry import CONFIG_SECTIONS, ENTITY_TYPES, config_section_names, entity_type
from .rules import check_entity
from .types import (
    ATTRIBUTE_TYPES,
    TYPE_PREFIX,
    AttributeDef,
    EntityTypeDef,
    SchemaError,
    UnknownEntityType,
    camel_case,
)
from .validate import validate_attributes

__all__ = [
    "ATTRIBUTE_TYPES",
    "CONFIG_SECTIONS",
    "CREATE",
    "ENTITY_TYPES",
    "TYPE_PREFIX",
    "UPDATE",
    "AttributeDef",
    "EntityTypeDef",
    "InvalidValue",
    "Problem",
    "SchemaError",
    "UnknownEntityType",
    "Validated",
    "camel_case",
    "check_entity",
    "coerce_value",
    "config_section_names",
    "entity_type",
    "validate_attributes",
]
