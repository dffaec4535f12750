"""CREATE, READ, UPDATE and DELETE of entities. Checks everything before changing anything,
so a rejected request leaves the router as it was."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..schema import CREATE, UPDATE, EntityTypeDef, UnknownEntityType, entity_type, validate_attributes
from .config_store import ManagedEntity
from .core_columns import answers_core_columns, complete_row
from .messages import Request
from .status import (
    CREATED,
    NO_CONTENT,
    OK,
    ManagementStatus,
    bad_request,
    missing_entity,
    not_found,
    not_implemented,
    wrong_type,
)

log = logging.getLogger("qdrouter.AGENT")

Reply = Tuple[int, Any]
Rows = Callable[[Optional[EntityTypeDef]], List[Dict[str, Any]]]


def _type(request: Request, required: bool) -> EntityTypeDef | None:
    name = request.entity_type
    if name is None:
        if required:
            raise bad_request(f"{request.operation}: application-property 'type' is required")
        return None
    try:
        return entity_type(name)
    except UnknownEntityType as e:
        raise not_found(str(e)) from None    # the schema's message: with "did you mean", if close
    except KeyError:
        raise not_found(f"unknown entity type {name!r}") from None


def _attributes(request: Request) -> Dict[str, Any]:
    body = request.body if request.body is not None else {}
    if not isinstance(body, dict):
        raise bad_request(f"{request.operation}: the body must be a map of attributes")
    attributes = {}
    for key, value in body.items():
        if not isinstance(key, str):
            raise bad_request(f"{request.operation}: attribute names must be strings, got {key!r}")
        attributes[key] = value
    return attributes


def _check_operation(etype: EntityTypeDef, operation: str) -> None:
    if operation not in etype.operations:
        # qdrouterd's status and words (schema.py, EntityType.allowed)
        raise not_implemented(f"Operation {operation!r} not implemented for {etype.long_name!r} "
                              f"{list(etype.operations)}")


def _problems(etype: EntityTypeDef, validated: Any) -> None:
    if not validated.ok:
        raise bad_request("; ".join(f"{etype.short_name}: {p.message}" for p in validated.problems))


def _locate(request: Request) -> Tuple[str | None, str | None]:
    if request.identity is None and request.name is None:
        raise bad_request(f"{request.operation}: 'name' or 'identity' is required")
    return request.name, request.identity


def create(router: Any, request: Request, rows: Rows) -> Reply:
    etype = _type(request, required=True)
    assert etype is not None
    _check_operation(etype, "CREATE")
    attributes = _attributes(request)
    attributes.pop("type", None)
    if "identity" in attributes:
        raise bad_request(f"{etype.short_name}: attribute 'identity' is assigned by the router")
    if request.name is not None:
        attributes["name"] = request.name
    validated = validate_attributes(etype, attributes, mode=CREATE)
    _problems(etype, validated)
    if etype.singleton and router.store.of_type(etype):
        raise bad_request(f"{etype.short_name}: there can be only one, and it exists")
    entity = router.store.add(etype, dict(validated.attributes), "management")
    try:
        router.effects.created(entity)
    except ManagementStatus:
        router.store.remove(entity)  # created() changed nothing: it raises before it does
        raise
    except Exception:
        # A fault of the router's own: whatever part of the entity took effect is undone, so
        # that the failed request leaves no entity behind (shown by QUERY, holding its name).
        router.store.remove(entity)
        _undo(router, entity)
        raise
    # The row a READ or QUERY answers from now on, run-time state included (an autoLink's
    # phase and operStatus, a connector's connectionStatus).
    for row in rows(etype):
        if row.get("identity") == entity.identity:
            return CREATED, row
    if answers_core_columns(etype):
        return CREATED, complete_row(etype, entity.as_map())
    return CREATED, entity.as_map()


def _undo(router: Any, entity: ManagedEntity) -> None:
    try:
        router.effects.deleted(entity)
    except Exception:  # the original error is the one to report
        log.exception("Undoing the failed creation of %s %r", entity.etype.short_name, entity.name)


def read(router: Any, request: Request, rows: Rows) -> Reply:
    etype = _type(request, required=False)
    name, identity = _locate(request)
    for row in rows(etype):
        if (identity is not None and row.get("identity") == identity) or (
                identity is None and row.get("name") == name):
            return OK, row
    if etype is not None:
        for row in rows(None):
            if (identity is not None and row.get("identity") == identity) or (
                    identity is None and row.get("name") == name):
                raise wrong_type(str(row.get("type")), etype.long_name)
    raise missing_entity(etype.short_name if etype else None, name, identity)


def _config_entity(router: Any, request: Request) -> ManagedEntity:
    etype = _type(request, required=False)
    name, identity = _locate(request)
    found: ManagedEntity = router.store.find(etype, name, identity)
    return found


def update(router: Any, request: Request) -> Reply:
    entity = _config_entity(router, request)
    etype = entity.etype
    _check_operation(etype, "UPDATE")
    changes = _attributes(request)
    for key in ("type", "identity"):
        changes.pop(key, None)
    new_name = changes.pop("name", None)
    if new_name is not None and new_name != entity.name:
        raise bad_request(f"{etype.short_name}: attribute 'name' cannot be changed by update")
    validated = validate_attributes(etype, changes, mode=UPDATE)
    _problems(etype, validated)
    if etype.short_name in ("log", "vhost", "sslProfile"):
        router.effects.updated(entity, validated.attributes)
    else:
        entity.attributes.update(validated.attributes)
    return OK, entity.as_map()


def delete(router: Any, request: Request) -> Reply:
    entity = _config_entity(router, request)
    _check_operation(entity.etype, "DELETE")
    router.effects.deleted(entity)
    router.store.remove(entity)
    return NO_CONTENT, None
