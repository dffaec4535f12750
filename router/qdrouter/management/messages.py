"""Decoding management requests and encoding replies.

Proton's Python Message class is used here: management is off the data path, and
correctness of the AMQP types matters more than microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict

from proton import Message

from ..amqp.message_sections import MessageFormatError, skip_value
from .status import ManagementStatus, bad_request, describe

MAX_REQUEST_BYTES = 1024 * 1024


@dataclass
class Request:
    operation: str
    properties: Dict[str, Any]
    body: Any
    reply_to: str | None
    correlation_id: Any
    entity_type: str | None = None
    name: str | None = None
    identity: str | None = None
    extra: Dict[str, Any] = field(default_factory=dict)


class UndecodableRequest(Exception):
    """Not an AMQP message we can answer; the delivery is rejected instead."""


def decode_request(raw: bytes) -> Request:
    """The request's addressing, or UndecodableRequest; check_request then validates it, so
    that a bad request can still be answered at its reply-to address."""
    _check_complete(raw)
    message = Message()
    try:
        message.decode(raw)
        # Proton decodes strings lazily: invalid UTF-8 surfaces only when a field is read.
        reply_to = message.reply_to
        properties = message.properties
        correlation_id = message.correlation_id if message.correlation_id is not None else message.id
        body = message.body
    except Exception as error:  # proton raises several types for malformed input
        raise UndecodableRequest(f"malformed AMQP message: {error}") from None
    if reply_to is not None and not isinstance(reply_to, str):
        raise UndecodableRequest("malformed AMQP message: reply-to is not a string")
    if reply_to is not None and reply_to.startswith("amqp:/"):
        reply_to = reply_to[6:]
    if isinstance(correlation_id, memoryview):
        correlation_id = bytes(correlation_id)  # proton would encode a memoryview as null
    request = Request("", {}, body, reply_to, correlation_id)
    request.properties = properties if isinstance(properties, dict) else {}
    if len(raw) > MAX_REQUEST_BYTES:
        request.extra["too_large"] = len(raw)
    return request


def _check_complete(raw: bytes) -> None:
    """Every section must be whole: proton's decoder silently drops a truncated body, and a
    truncated CREATE must not run with whatever attributes survived."""
    position = 0
    try:
        while position < len(raw):
            position = skip_value(raw, position)
    except MessageFormatError as error:
        raise UndecodableRequest(f"malformed AMQP message: {error}") from None
    if position != len(raw):
        raise UndecodableRequest("malformed AMQP message: trailing bytes after the last section")


def check_request(request: Request) -> None:
    """Raise the 4xx status a malformed request deserves."""
    too_large = request.extra.get("too_large")
    if too_large:
        raise ManagementStatus(
            413, f"request of {too_large} bytes exceeds the {MAX_REQUEST_BYTES} byte limit")
    properties = request.properties
    if not properties:
        raise bad_request("request has no application-properties (expected 'operation')")
    request.properties = {str(key): value for key, value in properties.items()}
    operation = request.properties.get("operation")
    if not isinstance(operation, str) or not operation:
        raise bad_request("application-property 'operation' is missing or not a string")
    request.operation = operation.upper()
    for key in ("type", "name", "identity"):
        value = request.properties.get(key)
        if value is not None and not isinstance(value, str):
            raise bad_request(f"application-property '{key}' must be a string")
    request.entity_type = request.properties.get("type")
    request.name = request.properties.get("name")
    request.identity = request.properties.get("identity")


def encode_reply(request: Request, code: int, description: str | None, body: Any) -> bytes:
    reply = Message(
        address=request.reply_to,
        correlation_id=request.correlation_id,
        properties={"statusCode": code, "statusDescription": description or describe(code)},
        body=body,
    )
    return bytes(reply.encode())
