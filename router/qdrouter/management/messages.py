"""Decoding management requests and encoding replies, with the router's own AMQP codec
(amqp/codec/): it has no limit on the number of values a message holds, so a reply of any
size that AMQP allows can be sent, and a request of any shape is decoded or refused with
a MessageFormatError, never an exception that could take the router down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict

from ..amqp.codec import (
    AMQP_DATA,
    AMQP_VALUE,
    AmqpEncodeError,
    Header,
    Message,
    MessageFormatError,
    Properties,
    decode_message,
    decode_value,
    encode_message,
)
from ..amqp.codec.amqp_types import section_descriptor, skip_value
from ..core.address_view import hash_view
from ..core.links import IN_PROCESS_LIMIT
from .status import INTERNAL_ERROR, ManagementStatus, bad_request, describe

# What the router gives an in-process node; a larger request arrives as its head only.
MAX_REQUEST_BYTES = IN_PROCESS_LIMIT
PROPERTIES_CODE = 0x73  # the properties section's descriptor


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


def decode_request(raw: bytes, full_size: int = 0) -> Request:
    """The request's addressing, or UndecodableRequest; check_request then validates it, so
    that a bad request can still be answered at its reply-to address. ``full_size``: the
    request's size when ``raw`` is its head only (it was larger than MAX_REQUEST_BYTES)."""
    size = full_size or len(raw)
    too_large = size > MAX_REQUEST_BYTES
    malformed_body = None
    try:
        # An oversized request is answered 413 at its reply-to: its body is not built.
        message = decode_message(raw, with_body=not too_large)
    except MessageFormatError as error:
        found = _properties_only(raw) if too_large else None
        if found is not None:
            # Its head may end inside a section: the properties still name the reply-to.
            request = _undecodable(found, f"a request of {size} bytes, cut to its head")
            request.extra = {"too_large": size}
            return request
        try:
            # Only the body is bad (nested too deeply, say): the request can still be
            # answered, with what was wrong with it.
            message = decode_message(raw, with_body=False)
            malformed_body = str(error)
        except MessageFormatError:
            # Worse (application-properties nested too deeply, say): answered all the same
            # when its properties name a reply-to.
            found = _properties_only(raw)
            if found is None:
                raise UndecodableRequest(f"malformed AMQP message: {error}") from None
            return _undecodable(found, f"the request cannot be decoded: {error}")
    fields = message.properties or Properties()
    reply_to = fields.reply_to
    correlation_id = fields.correlation_id if fields.correlation_id is not None else fields.message_id
    if reply_to is not None and not isinstance(reply_to, str):
        raise UndecodableRequest("malformed AMQP message: reply-to is not a string")
    if reply_to is not None:
        reply_to = hash_view(reply_to)  # routed as any address ("amqp:/x" is "x")
    request = Request("", {}, _body(message), reply_to, correlation_id)
    properties = message.application_properties
    request.properties = properties if isinstance(properties, dict) else {}
    if too_large:
        request.extra["too_large"] = size
    if malformed_body is not None:
        request.extra["malformed_body"] = malformed_body
    return request


def _properties_only(raw: bytes) -> Properties | None:
    """The properties section of a message whose other sections may not decode, if it has one
    that does (the sections before it are skipped, not decoded)."""
    pos = 0
    try:
        while pos < len(raw):
            if raw[pos] != 0x00:
                return None
            code, value_pos = section_descriptor(raw, pos + 1)
            if code == PROPERTIES_CODE:
                value, _ = decode_value(raw, value_pos)
                if isinstance(value, list) and len(value) <= 13:
                    return Properties(*value)
                return None
            if code > PROPERTIES_CODE:
                return None
            pos = skip_value(raw, value_pos)
    except (MessageFormatError, IndexError, TypeError):
        return None
    return None


def _undecodable(properties: Properties, description: str) -> Request:
    reply_to = properties.reply_to
    if not isinstance(reply_to, str):
        raise UndecodableRequest(f"malformed AMQP message ({description}) without a reply-to")
    correlation_id = properties.correlation_id if properties.correlation_id is not None \
        else properties.message_id
    request = Request("", {}, None, hash_view(reply_to), correlation_id)
    request.extra["undecodable"] = description
    return request


def _body(message: Message) -> Any:
    if message.body_kind == AMQP_VALUE:
        return message.body
    if message.body_kind == AMQP_DATA:
        return b"".join(message.body)
    return message.body  # amqp-sequence sections: a list of lists, which no operation takes


def check_request(request: Request) -> None:
    """Raise the 4xx status a malformed request deserves."""
    too_large = request.extra.get("too_large")
    if too_large:
        raise ManagementStatus(
            413, f"request of {too_large} bytes exceeds the {MAX_REQUEST_BYTES} byte limit")
    undecodable = request.extra.get("undecodable")
    if undecodable:
        raise bad_request(undecodable)
    malformed_body = request.extra.get("malformed_body")
    if malformed_body:
        raise bad_request(f"the request's body cannot be decoded: {malformed_body}")
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
    """The reply, as qdrouterd shapes it: header, properties (to = the request's reply-to,
    its correlation-id with its AMQP type kept), statusCode/statusDescription, the body."""
    try:
        return _reply(request, code, description or describe(code), body)
    except AmqpEncodeError as error:  # a value the agent should never have produced
        return _reply(request, INTERNAL_ERROR, f"internal error: reply not encodable: {error}", None)


def _reply(request: Request, code: int, description: str, body: Any) -> bytes:
    return encode_message(Message(
        header=Header(),
        properties=Properties(to=request.reply_to, correlation_id=request.correlation_id),
        application_properties={"statusCode": code, "statusDescription": description},
        body=body,
    ))
