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
