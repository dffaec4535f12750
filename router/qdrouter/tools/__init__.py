"""Management tools: the AMQP management client library and the qdstat/qdmanage commands."""

from __future__ import annotations

from .errors import (
    BadReply,
    BadRequest,
    Forbidden,
    ManagementConnectionError,
    ManagementError,
    ManagementTimeout,
    NotFound,
    NotImplementedStatus,
    StatusError,
)
from .management_client import DEFAULT_URL, ManagementClient

__all__ = [
    "DEFAULT_URL",
    "BadReply",
    "BadRequest",
    "Forbidden",
    "ManagementClient",
    "ManagementConnectionError",
    "ManagementError",
    "ManagementTimeout",
    "NotFound",
    "NotImplementedStatus",
    "StatusError",
]
