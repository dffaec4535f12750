"""Management replies' status codes, raised as exceptions by the operations."""

from __future__ import annotations

OK = 200
CREATED = 201
NO_CONTENT = 204
BAD_REQUEST = 400
FORBIDDEN = 403
NOT_FOUND = 404
METHOD_NOT_ALLOWED = 405
REQUEST_TOO_LARGE = 413
INTERNAL_ERROR = 500
NOT_IMPLEMENTED = 501

_DESCRIPTIONS = {
    OK: "OK",
    CREATED: "Created",
    NO_CONTENT: "No Content",
    BAD_REQUEST: "Bad Request",
    FORBIDDEN: "Forbidden",
    NOT_FOUND: "Not Found",
    METHOD_NOT_ALLOWED: "Method Not Allowed",
    REQUEST_TOO_LARGE: "Request Too Large",
    INTERNAL_ERROR: "Internal Server Error",
    NOT_IMPLEMENTED: "Not Implemented",
}


def describe(code: int) -> str:
    return _DESCRIPTIONS.get(code, str(code))


class ManagementStatus(Exception):
    """A non-2xx answer: ``description`` says what was wrong, naming the field."""

    def __init__(self, code: int, description: str) -> None:
        super().__init__(description)
        self.code = code
        self.description = description


def bad_request(description: str) -> ManagementStatus:
    return ManagementStatus(BAD_REQUEST, description)


def not_found(description: str) -> ManagementStatus:
    return ManagementStatus(NOT_FOUND, description)


def forbidden(description: str) -> ManagementStatus:
    return ManagementStatus(FORBIDDEN, description)


def not_allowed(description: str) -> ManagementStatus:
    return ManagementStatus(METHOD_NOT_ALLOWED, description)


def not_implemented(description: str) -> ManagementStatus:
    return ManagementStatus(NOT_IMPLEMENTED, description)


# Configuration the router core keeps in qdrouterd (src/router_core/agent_config_*.c): its agent
# words a missing entity "Not Found" and a taken name "Name conflicts with an existing entity";
# the Python agent's entities are "No entity with name=N" (scripts and tests match these words).
CORE_CONFIG_TYPES = ("router.config.address", "router.config.linkRoute", "router.config.autoLink",
                     "router.config.exchange", "router.config.binding")


def missing_entity(kind: str | None, name: str | None, identity: str | None) -> ManagementStatus:
    """404 for an entity that is not there: qdrouterd's words, then which type and key."""
    key, value = ("identity", identity) if identity is not None else ("name", name)
    if kind in CORE_CONFIG_TYPES:
        return not_found(f"Not Found: no {kind} entity with {key} {value!r}")
    return not_found(f"No entity with {key}={value}" + (f" (type {kind})" if kind else ""))


def name_taken(kind: str, name: str) -> ManagementStatus:
    """400 for a create naming an entity that exists: qdrouterd's words, then which."""
    if kind in CORE_CONFIG_TYPES:
        return bad_request(f"Name conflicts with an existing entity: {kind} {name!r}")
    return bad_request(f"{kind}: an entity named {name!r} already exists "
                       "(duplicates unique attribute 'name')")


def wrong_type(found: str, requested: str) -> ManagementStatus:
    """400 for an entity named under another type than its own, in qdrouterd's words."""
    return bad_request(f"Entity type '{found}' does not extend requested type '{requested}'")
