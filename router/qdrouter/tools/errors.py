"""Exceptions of the management client: every failure is a ManagementError with a one-line message.

Agent replies with a non-2xx statusCode become StatusError subclasses chosen by the code, so
callers (qdmanage, the operator) can write ``except NotFound``.  Failures that never produced a
status (no connection, timeout, malformed reply) carry status_code 0.
"""

from __future__ import annotations

from typing import Dict, Type


class ManagementError(Exception):
    """Any failure of a management request.  str() is one line, suitable for a CLI error."""

    status_code: int = 0
    #: Short name of the failure kind, printed before the description ("NotFound: ...").
    kind: str = "ManagementError"

    def __init__(self, description: str, status_code: int | None = None) -> None:
        # Multi-line descriptions (agent tracebacks, proton conditions) would break the
        # one-line error contract of the commands.
        self.description = " ".join(str(description).split())
        if status_code is not None:
            self.status_code = status_code
        super().__init__(self.description)

    def __str__(self) -> str:
        return self.description


class ManagementConnectionError(ManagementError, ConnectionError):
    """The router could not be reached, refused us, or dropped the connection."""

    kind = "ConnectionError"


class ManagementTimeout(ManagementConnectionError, TimeoutError):
    """No connection or no reply within the client's timeout."""

    kind = "Timeout"


class BadReply(ManagementError):
    """The agent answered with something that is not a management reply."""

    kind = "BadReply"


class StatusError(ManagementError):
    """The agent answered with a non-success statusCode."""

    kind = "Error"

    def __str__(self) -> str:
        return f"{self.kind}: {self.description}" if self.description else self.kind


class BadRequest(StatusError):
    status_code = 400
    kind = "BadRequest"


class Unauthorized(StatusError):
    status_code = 401
    kind = "Unauthorized"


class Forbidden(StatusError):
    status_code = 403
    kind = "Forbidden"


class NotFound(StatusError):
    status_code = 404
    kind = "NotFound"


class MethodNotAllowed(StatusError):
    status_code = 405
    kind = "MethodNotAllowed"


class InternalError(StatusError):
    status_code = 500
    kind = "InternalError"


class NotImplementedStatus(StatusError):
    status_code = 501
    kind = "NotImplemented"


_BY_CODE: Dict[int, Type[StatusError]] = {
    cls.status_code: cls
    for cls in (BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, InternalError,
                NotImplementedStatus)
}


def status_error(status_code: int, description: str) -> StatusError:
    """The exception for an agent reply with this (non-2xx) status."""
    cls = _BY_CODE.get(status_code)
    if cls is not None:
        return cls(description)
    err = StatusError(description, status_code)
    err.kind = f"Status{status_code}"
    return err
