"""The schema as management reports it: GET-TYPES, GET-ATTRIBUTES, GET-OPERATIONS,
GET-ANNOTATIONS, GET-SCHEMA and GET-JSON-SCHEMA."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from ..schema import ENTITY_TYPES, EntityTypeDef

SCHEMA_PREFIX = "org.apache.qpid.dispatch"


def selected(entity_type: EntityTypeDef | None) -> List[EntityTypeDef]:
    return [entity_type] if entity_type is not None else list(ENTITY_TYPES.values())


def types_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    return {t.long_name: list(t.extends) for t in selected(entity_type)}


def attributes_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    return {t.long_name: list(t.attributes) for t in selected(entity_type)}


def operations_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    return {t.long_name: list(t.operations) for t in selected(entity_type)}


def annotations_map(entity_type: EntityTypeDef | None) -> Dict[str, List[str]]:
    return {t.long_name: [] for t in selected(entity_type)}


def _attribute_schema(attribute: Any) -> Dict[str, Any]:
    described: Dict[str, Any] = {
        "type": list(attribute.choices) if attribute.type == "enum" else attribute.type,
        "description": attribute.description,
    }
    if attribute.default is not None:
        described["default"] = attribute.default
    for flag in ("required", "create", "update"):
        if getattr(attribute, flag):
            described[flag] = True
    return described


def schema_map() -> Dict[str, Any]:
    entity_types = {}
    for etype in ENTITY_TYPES.values():
        short = etype.long_name[len(SCHEMA_PREFIX) + 1:] if etype.long_name.startswith(SCHEMA_PREFIX) \
            else etype.long_name
        entity_types[short] = {
            "description": etype.description,
            "operations": list(etype.operations),
            "extends": [name.rsplit(".", 1)[-1] for name in etype.extends],
            "singleton": etype.singleton,
            "attributes": {name: _attribute_schema(attr) for name, attr in etype.attributes.items()},
        }
    return {"prefix": SCHEMA_PREFIX, "entityTypes": entity_types}


def json_schema() -> str:
    return json.dumps(schema_map(), indent=2, sort_keys=True, default=str)
