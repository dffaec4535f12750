"""The management agent: requests in at `$management`, replies out to their reply-to."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Tuple

from .. import log_config
from ..core.address_table import CLOSEST
from ..core.links import CoreLink, InFlight
from ..core.outcomes import ACCEPTED, REJECTED
from ..schema import EntityTypeDef, UnknownEntityType, entity_type
from ..schema.types import closest_name
from ..schema.validate import validate_attributes
from . import connection_ops, entity_ops, fault_hooks, operational, schema_ops
from .core_columns import answers_core_columns, complete_row, default_columns
from .messages import Request, UndecodableRequest, check_request, decode_request, encode_reply
from .status import INTERNAL_ERROR, OK, ManagementStatus, bad_request, forbidden, not_found, not_implemented

log = logging.getLogger("qdrouter.AGENT")

MANAGEMENT_TYPE = "org.amqp.management"
# qdrouterd's QDR_AGENT_MAX_COLUMNS: a QUERY naming this many attributes or more gets them all.
MAX_QUERY_COLUMNS = 64
Reply = Tuple[int, Any]


class ManagementAgent:
    def __init__(self, router: Any) -> None:
        self.router = router
        self.forwarder = router.server.adaptor.forwarder
        # Replies come "from" this in-process endpoint.
        self.origin = CoreLink(0, "$management", True, None, None, None)
        # The connection the request being answered came on (policy checks of UPDATE).
        self._requester: Any = None
        for key in self.addresses():
            address = self.forwarder.table.subscribe(key, self.handle)
            address.distribution = CLOSEST  # as qdrouterd reports its agent
        self._node_operations: Dict[str, Callable[[Request], Reply]] = {
            "QUERY": self._query,
            "GET-TYPES": lambda r: (OK, schema_ops.types_map(self._entity_type_filter(r))),
            "GET-ATTRIBUTES": lambda r: (OK, schema_ops.attributes_map(self._entity_type_filter(r))),
            "GET-OPERATIONS": lambda r: (OK, schema_ops.operations_map(self._entity_type_filter(r))),
            "GET-ANNOTATIONS": lambda r: (OK, schema_ops.annotations_map(self._entity_type_filter(r))),
            "GET-MGMT-NODES": lambda r: (OK, self._management_nodes()),
            "GET-SCHEMA": lambda r: (OK, schema_ops.schema_map()),
            "GET-JSON-SCHEMA": lambda r: (OK, schema_ops.json_schema()),
            "GET-LOG": self._get_log,
            # Test only, refused unless the router runs with -T/--test-hooks (fault_hooks.py).
            "TEST-FAULT": lambda r: fault_hooks.arm(router, r),
        }
        self._entity_operations: Dict[str, Callable[[Request], Reply]] = {
            "CREATE": lambda r: entity_ops.create(router, r, self.rows),
            "READ": lambda r: entity_ops.read(router, r, self.rows),
            "UPDATE": self._update,
            "DELETE": lambda r: entity_ops.delete(router, r),
        }

    def addresses(self) -> List[str]:
        # $_management_internal: qdrouterd's agent answers there too (its own modules use it).
        own = f"_edge/{self.router.id}" if self.router.mode == "edge" else f"_topo/0/{self.router.id}"
        return ["$management", "_local/$management", "_local/$_management_internal", f"{own}/$management"]

    # ---- one request -------------------------------------------------------------------
    def handle(self, message: InFlight) -> int:
        try:
            request = decode_request(message.raw, message.full_size)
        except UndecodableRequest as error:
            log.info("Rejected a management request: %s", error)
            return REJECTED
        if not request.reply_to:
            log.info("Rejected a management request without reply-to")
            return REJECTED
        description = None
        try:
            check_request(request)
            _check_policy(request, message)
            self._requester = message.in_link.connection if message.in_link is not None else None
            code, body = self.execute(request)
        except ManagementStatus as status:
            code, body, description = status.code, None, status.description
        except Exception as error:  # a bug must not take the router down
            log.exception("Management request %s failed", request.operation)
            code, body, description = INTERNAL_ERROR, None, f"internal error: {error}"
        log.debug("%s %s -> %d", request.operation, request.entity_type or "", code)
        reply = encode_reply(request, code, description, body)
        if not self.forwarder.inject(reply, request.reply_to, self.origin):
            log.info("No route to reply-to %r of a management request", request.reply_to)
        return ACCEPTED

    def execute(self, request: Request) -> Reply:
        operation = request.operation
        handler = self._entity_operations.get(operation) or self._node_operations.get(operation)
        if handler is None:
            known = [*self._entity_operations, *self._node_operations]
            hint = closest_name(operation, [name for name in known if name != "TEST-FAULT"])
            suffix = f" (did you mean {hint!r}?)" if hint else ""
            raise not_implemented(f"operation {operation!r} is not supported{suffix}")
        if operation in self._node_operations and operation != "TEST-FAULT":
            _check_node_target(request)
        return handler(request)

    def _update(self, request: Request) -> Reply:
        if request.entity_type is not None and request.entity_type.rsplit(".", 1)[-1] == "connection":
            return connection_ops.update(self.router, request, self._requester, operational.connection_row)
        return entity_ops.update(self.router, request)

    # ---- node operations ---------------------------------------------------------------
    def _entity_type_filter(self, request: Request) -> EntityTypeDef | None:
        name = request.properties.get("entityType")
        if name is None:
            return None
        return resolve_type(name)

    def _query(self, request: Request) -> Reply:
        etype = self._entity_type_filter(request)
        body = request.body if request.body is not None else {}
        if not isinstance(body, dict):
            raise bad_request("QUERY: the body must be a map with 'attributeNames'")
        names = body.get("attributeNames") or []
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise bad_request("QUERY: 'attributeNames' must be a list of strings")
        if not names or len(names) >= MAX_QUERY_COLUMNS:
            # qdrouterd's agent answers a list of 64 names or more with every attribute, as
            # it does an empty one: a reply's columns stay bounded whatever the request names.
            names = _default_columns(etype)
        offset = _int_property(request, "offset", 0)
        # As qdrouterd: rows from offset on, at most count of them; no count (or 0) is every row.
        # Only the page's rows are made (the large tables make no others).
        count = _int_property(request, "count", None) or None
        rows = self.rows(etype, slice(offset, None if count is None else offset + count))
        return OK, {"attributeNames": names, "results": [[row.get(name) for name in names] for row in rows]}

    def _management_nodes(self) -> List[str]:
        mesh = self.router.mesh
        if mesh is None:
            return []
        # Every router of the mesh, this one included, as qdrouterd answers.
        routers = {*mesh.routes.table, self.router.id}
        return [f"amqp:/_topo/0/{router_id}/$management" for router_id in sorted(routers)]

    def _get_log(self, request: Request) -> Reply:
        limit = _int_property(request, "limit", None)
        entries = list(log_config.RECENT.entries)
        if limit is not None:
            entries = entries[-limit:] if limit > 0 else []
        return OK, entries

    # ---- entity rows -------------------------------------------------------------------
    def rows(self, etype: EntityTypeDef | None, window: slice = operational.ALL) -> List[Dict[str, Any]]:
        """The entities of ``etype`` (all types: None), or those in ``window`` (a QUERY's
        offset and count): the live ones with many rows make only those."""
        if etype is None:
            rows: List[Dict[str, Any]] = []
            for each in schema_ops.selected(None):
                rows.extend(self.rows(each))
            return rows[window]
        short = etype.short_name
        router = self.router
        if short == "connection":
            return operational.connection_rows(router, window)
        if short == "router.link":
            return operational.link_rows(router, window)
        if short == "router.address":
            return operational.address_rows(router, window)
        return self._few_rows(etype)[window]

    def _few_rows(self, etype: EntityTypeDef) -> List[Dict[str, Any]]:
        short = etype.short_name
        router = self.router
        if short == "vhostStats":
            return router.policy.vhost_stats_rows()
        if short == "router.node":
            return router.node_rows()
        if short in ("management", MANAGEMENT_TYPE):
            return [{"name": "self", "identity": "self", "type": etype.long_name}]
        configured = [entity.as_map() for entity in router.store.of_type(etype)]
        if short == "connector":
            for row, entity in zip(configured, router.store.of_type(etype)):
                row.update(router.connector_status(entity))
        elif short == "router.config.autoLink":
            for row, entity in zip(configured, router.store.of_type(etype)):
                row.update(router.auto_links.status(entity))
        elif short == "router.config.linkRoute":
            for row, entity in zip(configured, router.store.of_type(etype)):
                row.update(router.link_route_status(entity))
        elif short == "sslProfile":
            for row, entity in zip(configured, router.store.of_type(etype)):
                row.update(router.tls_bindings.status(router.store, entity.name, entity.attributes))
        if answers_core_columns(etype):
            return [complete_row(etype, row) for row in configured]
        if short == "router":
            return [operational.router_row(router, configured[0] if configured else {})]
        if short == "policy":
            # Without a policy section the singleton still answers with its defaults, as
            # qdrouterd's does (its qdstat --policy reads every one of them).
            unconfigured = {**validate_attributes(etype, {}).attributes, "name": "policy",
                            "identity": "policy", "type": etype.long_name}
            return [router.policy.policy_row(configured[0] if configured else unconfigured)]
        return configured


def _check_node_target(request: Request) -> None:
    """A node operation is the management node's: a request whose ``type`` names another
    entity type is refused with qdrouterd's words (it looks that entity up first), rather than
    answered as though ``type`` were ``entityType``."""
    target = request.properties.get("type")
    if target is None or target in _NODE_TYPES:
        return
    props = request.properties
    if props.get("name") is None and props.get("identity") is None:
        raise bad_request(f"{target}: No name or identity provided")
    raise bad_request(f"Entity type '{_NODE_TYPES[1]}' does not extend requested type '{target}'")


_NODE_TYPES = (MANAGEMENT_TYPE, "org.apache.qpid.dispatch.management", "management")


def _default_columns(etype: EntityTypeDef | None) -> List[str]:
    if etype is None:
        return schema_ops.all_attribute_names()
    return default_columns(etype)


def resolve_type(name: Any) -> EntityTypeDef:
    if not isinstance(name, str):
        raise bad_request("entity type must be a string")
    try:
        return entity_type(name)
    except UnknownEntityType as e:
        raise not_found(str(e)) from None    # the schema's message: with "did you mean", if close
    except KeyError:
        raise not_found(f"unknown entity type {name!r}") from None


def _int_property(request: Request, key: str, default: Any) -> Any:
    value = request.properties.get(key, default)
    if value is None:
        return default
    if isinstance(value, str) and value.isdigit():
        value = int(value)  # qdmanage's key=value arguments arrive as strings; qdrouterd takes them
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad_request(f"application-property '{key}' must be a non-negative integer")
    return value


def _check_policy(request: Request, message: InFlight) -> None:
    """allowDynamicLinkRoutes: a connection whose vhost group forbids it may not create a
    connection-scoped link route (qdrouterd: agent_conn_link_route.c answers 403 Forbidden).
    The connection is the one the request arrived on, as in qdrouterd."""
    if request.operation != "CREATE" or request.entity_type is None:
        return
    try:
        short = entity_type(request.entity_type).short_name
    except (UnknownEntityType, KeyError):
        return  # the operation itself answers an unknown type
    connection = message.in_link.connection if message.in_link is not None else None
    grant = getattr(connection, "policy", None)
    if short == "router.connection.linkRoute" and grant is not None and grant.group is not None \
            and not grant.group.allow_dynamic_link_routes:
        raise forbidden(f"Forbidden: policy: vhost {grant.vhost!r} group {grant.group.name!r}: "
                        f"allowDynamicLinkRoutes is false")
