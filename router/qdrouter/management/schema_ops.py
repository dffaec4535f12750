"""The schema as management reports it: GET-TYPES, GET-ATTRIBUTES, GET-OPERATIONS,
GET-ANNOTATIONS, GET-SCHEMA and GET-JSON-SCHEMA."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Tuple

from ..schema import ENTITY_TYPES, EntityTypeDef
from ..schema.builders import BASE_ATTRIBUTES, BASE_ENTITY, CONFIGURATION_ENTITY, OPERATIONAL_ENTITY
from ..schema.types import ENUM, INTEGER, AttributeDef

AMQP_MANAGEMENT_TYPE = "org.amqp.management"

SCHEMA_PREFIX = "org.apache.qpid.dispatch"


def selected(entity_type: EntityTypeDef | None) -> List[EntityTypeDef]:
    return [entity_type] if entity_type is not None else list(ENTITY_TYPES.values())


# GET-TYPES, GET-ATTRIBUTES and GET-OPERATIONS of every type list the abstract ones too, as
# qdrouterd does; asked for one type, they answer for it alone.
def types_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    abstract = {name: list(extends) for name, _, _, extends in _ABSTRACT} if entity_type is None else {}
    return {**abstract, **{t.long_name: list(t.extends) for t in selected(entity_type)}}


def attributes_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    abstract = {name: list(_ABSTRACT_ATTRIBUTES) for name, *_ in _ABSTRACT} if entity_type is None else {}
    return {**abstract, **{t.long_name: list(t.attributes) for t in selected(entity_type)}}


def operations_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    abstract = {name: list(ops) for name, _, ops, _ in _ABSTRACT} if entity_type is None else {}
    return {**abstract, **{t.long_name: list(t.operations) for t in selected(entity_type)}}


def annotations_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    """No type has annotations: an empty map, as qdrouterd answers (whatever type is asked)."""
    return {}


def all_attribute_names() -> List[str]:
    """Every attribute of every type (name, identity, type first): a QUERY's columns when it
    names neither a type nor attributes, as qdrouterd answers."""
    names = {"name": None, "identity": None, "type": None}
    for etype in ENTITY_TYPES.values():
        names.update(dict.fromkeys(etype.attributes))
    return list(names)


# Read-only integers that qdrouterd 1.19's schema does not mark for graphing (sizes, indexes,
# settings reported back); every other read-only integer is a counter or gauge, marked "graph".
_NOT_GRAPHED = frozenset({
    "transferBatchSize", "typeSize", "sslSsf", "sslProfileOrdinal", "inProcess", "priority", "capacity",
    "connectionId",
    "zeroCreditSeconds", "cost", "index", "instance", "lastTopoChange", "protocolVersion",
    "bindingCount", "matchedCount", "divertedCount", "droppedCount", "forwardedCount", "receivedCount",
    "internalErrorCount", "trackedDeliveries", "userIdDenied", "targetDenied",
})

# Attributes qdrouterd 1.19 keeps only for old configs (its schema marks them "deprecated").
_DEPRECATED = frozenset({("sslProfile", "passwordFile"), ("authServicePlugin", "authService")})

# The abstract types every entity type extends, as qdrouterd's schema lists them.
_ABSTRACT = (
    (BASE_ENTITY, "Base entity type for all entities.", (), ()),
    (CONFIGURATION_ENTITY, "Base type for entities containing configuration information.", ("READ",),
     (BASE_ENTITY,)),
    (OPERATIONAL_ENTITY, "Base type for entities containing current operational information.", ("READ",),
     (BASE_ENTITY,)),
)
_ABSTRACT_ATTRIBUTES = [a.name for a in BASE_ATTRIBUTES]


def _present(items: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """As qdrouterd's schema dump: keys whose value is empty or false are left out."""
    return {key: value for key, value in items if value}


def _attribute_schema(attribute: AttributeDef, entity_key: str = "") -> Dict[str, Any]:
    graph = (attribute.type == INTEGER and not attribute.settable and attribute.name not in _NOT_GRAPHED)
    return _present([
        ("type", list(attribute.choices) if attribute.type == ENUM else attribute.type),
        ("default", attribute.default),
        ("required", attribute.required),
        ("unique", attribute.name in ("name", "identity")),
        ("deprecated", (entity_key, attribute.name) in _DEPRECATED),
        ("description", attribute.description),
        ("graph", graph),
    ])


def schema_key(long_name: str) -> str:
    """The name qdrouterd's GET-SCHEMA gives an entity type: without the schema prefix, and
    the configuration entities of the router core (router.config.address) by their section."""
    short = long_name[len(SCHEMA_PREFIX) + 1:] if long_name.startswith(SCHEMA_PREFIX + ".") else long_name
    return short[len("router.config."):] if short.startswith("router.config.") else short


def schema_map() -> Dict[str, Any]:
    """GET-SCHEMA in the form qdrouterd 1.19 gives it (its schema.py ``dump``)."""
    entity_types: Dict[str, Any] = {}
    for long_name, description, operations, _ in _ABSTRACT:
        entity_types[schema_key(long_name)] = _present([
            ("attributes", {name: _attribute_schema(a) for a in BASE_ATTRIBUTES
                            if (name := a.name) != "type"}),
            ("operations", list(operations)),
            ("description", description),
            ("fullyQualifiedType", long_name),
        ])
    for etype in ENTITY_TYPES.values():
        key = schema_key(etype.long_name)
        entity_types[key] = _present([
            # The type attribute is the entity type itself, given as fullyQualifiedType.
            ("attributes", {name: _attribute_schema(a, key) for name, a in etype.attributes.items()
                            if name != "type"}),
            ("operations", list(etype.operations)),
            ("description", etype.description),
            ("fullyQualifiedType", etype.long_name),
            ("singleton", etype.singleton and etype.long_name != AMQP_MANAGEMENT_TYPE),
        ])
    return {"prefix": SCHEMA_PREFIX, "entityTypes": entity_types}


def json_schema() -> str:
    return json.dumps(schema_map(), indent=2, sort_keys=True, default=str)
