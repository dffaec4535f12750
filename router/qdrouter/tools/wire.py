"""The AMQP Management wire format as the router's agent speaks it (Qpid Dispatch 0.7 book, 3.3.5).

Pure functions, no I/O: building request messages, checking replies, and turning proton's
AMQP-typed values into plain Python values that json.dumps and callers can use directly.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Mapping, Tuple

from proton import Array, Described, Message

from .errors import BadReply, status_error

MANAGEMENT_ADDRESS = "$management"
#: The type and name that address the management node itself (node operations).
NODE_TYPE = "org.amqp.management"
NODE_NAME = "self"


def agent_address(router: str | None, edge_router: str | None = None) -> str:
    """$management on the router we are connected to, on router ``router`` of the network,
    or on edge router ``edge_router`` (qdrouterd's tools: ``_edge/<id>/$management``)."""
    if edge_router:
        return f"_edge/{edge_router}/{MANAGEMENT_ADDRESS}"
    return f"_topo/0/{router}/{MANAGEMENT_ADDRESS}" if router else MANAGEMENT_ADDRESS


def long_type_name(name: str) -> str:
    """The wire name for an entity type given by any of its names (``listener`` -> long name).

    Names the local schema does not know are sent unchanged so that the agent, which may be
    newer than this client, gets the final say.
    """
    from qdrouter.schema import UnknownEntityType, entity_type

    try:
        return entity_type(name).long_name
    except UnknownEntityType:
        return name


def request(operation: str, properties: Mapping[str, Any] | None = None, body: Any = None) -> Message:
    """A request message; ``properties`` whose value is None are left out."""
    props: Dict[str, Any] = {"operation": operation}
    for key, value in (properties or {}).items():
        if value is not None:
            props[key] = value
    return Message(properties=props, body=body)


def node_request(operation: str, entity_type: str | None = None, body: Any = None,
                 **extra: Any) -> Message:
    """A request for a node operation (QUERY, GET-TYPES, ...) of the management node itself."""
    props: Dict[str, Any] = {"type": NODE_TYPE, "name": NODE_NAME}
    if entity_type:
        props["entityType"] = long_type_name(entity_type)
    props.update(extra)
    return request(operation, props, body)


def entity_request(operation: str, entity_type: str | None, name: str | None, identity: str | None,
                   body: Any = None) -> Message:
    """A request for an operation on one entity (CREATE, READ, UPDATE, DELETE)."""
    props: Dict[str, Any] = {
        "type": long_type_name(entity_type) if entity_type else None,
        "name": name,
        "identity": identity,
    }
    return request(operation, props, body)


def new_correlation_id() -> str:
    return uuid.uuid4().hex


def check_reply(reply: Message) -> Any:
    """The body of a successful reply; raises the StatusError for a failed one."""
    props: Dict[str, Any] = reply.properties or {}
    if "statusCode" not in props:
        raise BadReply("reply has no statusCode application property")
    try:
        code = int(props["statusCode"])
    except (TypeError, ValueError):
        raise BadReply(f"reply has a non-integer statusCode: {props['statusCode']!r}") from None
    description = str(props.get("statusDescription") or "")
    if not 200 <= code < 300:
        raise status_error(code, description or f"status {code}")
    return plain(reply.body)


def plain(value: Any) -> Any:
    """``value`` with every AMQP-specific type replaced by its plain Python equivalent."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)  # ulong, uint, timestamp, ...
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)  # symbol, char
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Array):
        return [plain(v) for v in value.elements]
    if isinstance(value, Described):
        return plain(value.value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def query_body(attribute_names: List[str] | None) -> Dict[str, List[str]]:
    return {"attributeNames": list(attribute_names or [])}


def query_result(body: Any) -> Tuple[List[str], List[List[Any]]]:
    """(attributeNames, results) of a QUERY reply, checked for shape."""
    if not isinstance(body, dict) or "attributeNames" not in body or "results" not in body:
        raise BadReply("QUERY reply body is not a map with attributeNames and results")
    names, results = body["attributeNames"], body["results"]
    if not isinstance(names, list) or not isinstance(results, list):
        raise BadReply("QUERY reply attributeNames/results are not lists")
    for row in results:
        if not isinstance(row, list) or len(row) != len(names):
            raise BadReply(f"QUERY reply row does not match attributeNames: {row!r}")
    return [str(n) for n in names], results


def need_key(name: str | None, identity: str | None) -> None:
    if name is None and identity is None:
        raise ValueError("name or identity is required")


def as_map(body: Any, operation: str) -> Dict[str, Any]:
    if not isinstance(body, dict):
        raise BadReply(f"{operation} reply body is not a map: {type(body).__name__}")
    return body


def as_list(body: Any, operation: str) -> List[Any]:
    if not isinstance(body, list):
        raise BadReply(f"{operation} reply body is not a list: {type(body).__name__}")
    return body
