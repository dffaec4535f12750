"""The two building blocks of the schema: attribute and entity type definitions."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Mapping

#: Prefix of every long entity type name on the management wire.
TYPE_PREFIX = "org.apache.qpid.dispatch"

# Attribute types.  "enum" values are restricted to AttributeDef.choices.
STRING = "string"
INTEGER = "integer"
BOOLEAN = "boolean"
MAP = "map"
LIST = "list"
PATH = "path"
ENTITY_ID = "entityId"
PROPERTIES = "properties"  # a map whose keys are strings (AMQP connection properties)
ENUM = "enum"
FLOAT = "float"  # qdmesh: read-only measurements (router.node roundTripSeconds)

ATTRIBUTE_TYPES = frozenset({STRING, INTEGER, BOOLEAN, MAP, LIST, PATH, ENTITY_ID, PROPERTIES, ENUM, FLOAT})

_HYPHENATED = re.compile(r"-+([A-Za-z0-9])")


class SchemaError(Exception):
    """A name or value that the schema does not accept."""


class UnknownEntityType(SchemaError, KeyError):
    """No entity type has the requested name."""

    def __str__(self) -> str:
        # KeyError.__str__ would repr() the message and wrap it in quotes.
        return str(self.args[0]) if self.args else "unknown entity type"


def camel_case(name: str) -> str:
    """Map the older hyphenated spelling to the camelCase wire name: sasl-mechanisms -> saslMechanisms."""
    return _HYPHENATED.sub(lambda m: m.group(1).upper(), name)


def closest_name(wanted: str, candidates: list[str]) -> str | None:
    """The candidate a misspelt name most probably meant, if any is close enough."""
    by_lower = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(camel_case(wanted).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[match[0]] if match else None


@dataclass(frozen=True)
class AttributeDef:
    name: str
    type: str
    choices: tuple[str, ...] = ()
    default: object = None
    required: bool = False
    create: bool = False
    update: bool = False
    deprecated_names: tuple[str, ...] = ()
    description: str = ""
    #: Integers only: the smallest and largest values accepted (None: the INT64 bound).
    minimum: int | None = None
    maximum: int | None = None

    def __post_init__(self) -> None:
        if (self.minimum is not None or self.maximum is not None) and self.type != INTEGER:
            raise SchemaError(f"attribute {self.name!r}: a range goes with type 'integer' only")
        if self.type not in ATTRIBUTE_TYPES:
            raise SchemaError(f"attribute {self.name!r}: unknown type {self.type!r}")
        if (self.type == ENUM) != bool(self.choices):
            raise SchemaError(f"attribute {self.name!r}: choices go with type 'enum' and only with it")

    @property
    def settable(self) -> bool:
        """Whether a user may ever give this attribute a value (at create or by update)."""
        return self.create or self.update


@dataclass(frozen=True)
class EntityTypeDef:
    long_name: str
    short_name: str
    config_section: str | None
    attributes: Mapping[str, AttributeDef] = field(hash=False)
    operations: tuple[str, ...]
    singleton: bool
    description: str
    #: Long names of the abstract types this one extends, nearest first (reported by GET-TYPES).
    extends: tuple[str, ...] = ()
    _aliases: Mapping[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        aliases: dict[str, str] = {}
        for attr in self.attributes.values():
            for old in attr.deprecated_names:
                aliases[camel_case(old)] = attr.name
        # The dataclass is frozen; this index is derived data, built once here.
        object.__setattr__(self, "_aliases", aliases)

    def resolve_attribute(self, name: str) -> AttributeDef | None:
        """The attribute called `name`: its wire name, hyphenated spelling or a deprecated name."""
        canonical = camel_case(name)
        attr = self.attributes.get(canonical)
        if attr is None and canonical in self._aliases:
            attr = self.attributes[self._aliases[canonical]]
        return attr

    def is_deprecated_spelling(self, name: str) -> bool:
        """True when `name` reaches an attribute only through one of its deprecated names."""
        return camel_case(name) in self._aliases and camel_case(name) not in self.attributes

    def suggest_attribute(self, name: str) -> str | None:
        """The settable attribute that a misspelt `name` probably meant."""
        return closest_name(name, [a.name for a in self.attributes.values() if a.settable])

    @property
    def is_configuration(self) -> bool:
        return self.config_section is not None
