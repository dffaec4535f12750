"""Shorthands that keep the entity data modules readable."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Sequence

from .types import ENUM, INTEGER, TYPE_PREFIX, AttributeDef, EntityTypeDef, SchemaError

CONFIGURATION_ENTITY = f"{TYPE_PREFIX}.configurationEntity"
OPERATIONAL_ENTITY = f"{TYPE_PREFIX}.operationalEntity"
BASE_ENTITY = f"{TYPE_PREFIX}.entity"

# Operations in the order management tools list them.
_OPERATION_ORDER = ("CREATE", "READ", "UPDATE", "DELETE")

#: Attributes every entity has, whatever its type.
BASE_ATTRIBUTES = (
    AttributeDef("name", "string", create=True,
                 description="Name given by the user; unique among all entities."),
    AttributeDef("identity", "string",
                 description="Identity assigned by the router; unique and never changes."),
    AttributeDef("type", "string", required=True, create=True,
                 description="Long name of the entity's type."),
)


def attr(name: str, type_: str, *, choices: Sequence[str] = (), default: object = None,
         required: bool = False, create: bool = False, update: bool = False,
         deprecated: Sequence[str] = (), doc: str = "", minimum: int | None = None,
         maximum: int | None = None) -> AttributeDef:
    """Any attribute.  Giving `choices` makes it an enum; `minimum`/`maximum` bound an integer."""
    return AttributeDef(name=name, type=ENUM if choices else type_, choices=tuple(choices),
                        default=default, required=required, create=create, update=update,
                        deprecated_names=tuple(deprecated), description=doc, minimum=minimum,
                        maximum=maximum)


def conf(name: str, type_: str = "string", **kwargs: Any) -> AttributeDef:
    """An attribute set at creation: in the config file or by a management CREATE."""
    return attr(name, type_, create=True, **kwargs)


def one_of(name: str, *choices: str, **kwargs: Any) -> AttributeDef:
    """A configurable enum attribute."""
    return attr(name, ENUM, choices=choices, create=True, **kwargs)


def status(name: str, type_: str = "string", **kwargs: Any) -> AttributeDef:
    """A read-only attribute reporting run-time state."""
    return attr(name, type_, **kwargs)


def count(name: str, doc: str = "") -> AttributeDef:
    """A read-only integer counter or gauge."""
    return attr(name, INTEGER, doc=doc)


def _order_operations(ops: Sequence[str]) -> tuple[str, ...]:
    known = [op for op in _OPERATION_ORDER if op in ops]
    return tuple(known + [op for op in ops if op not in _OPERATION_ORDER])


def entity(short_name: str, attributes: Sequence[AttributeDef], *, doc: str,
           operational: bool = False, operations: Sequence[str] = (), singleton: bool = False,
           config_section: str | None = "", long_name: str = "",
           extends: Sequence[str] = ()) -> EntityTypeDef:
    """An entity type.  READ is always allowed, as every entity type inherits it.

    `config_section` defaults to the last component of the short name for configuration
    entities (router.config.autoLink -> autoLink) and to None for operational ones; pass None
    for configuration entities that the config file cannot hold.
    """
    if config_section == "":
        config_section = None if operational else short_name.rsplit(".", 1)[-1]
    merged: dict[str, AttributeDef] = {a.name: a for a in BASE_ATTRIBUTES}
    for a in attributes:
        if a.name in merged and a.name not in ("name", "identity", "type"):
            raise SchemaError(f"{short_name}: attribute {a.name!r} defined twice")
        merged[a.name] = a
    base = OPERATIONAL_ENTITY if operational else CONFIGURATION_ENTITY
    return EntityTypeDef(
        long_name=long_name or f"{TYPE_PREFIX}.{short_name}",
        short_name=short_name,
        config_section=config_section,
        attributes=MappingProxyType(merged),
        operations=_order_operations(["READ", *operations]),
        singleton=singleton,
        description=doc,
        extends=tuple(extends) or (base, BASE_ENTITY),
    )
