"""Whole AMQP 1.0 messages: sections built from Python values and parsed back.

A message is its sections in the order AMQP fixes (header, delivery-annotations,
message-annotations, properties, application-properties, one body kind, footer), each
once (the body's data and amqp-sequence sections may repeat). Keys are typed as AMQP asks:
annotation keys are symbols (a ``str`` key is sent as one, as proton does), application
property keys are strings; decoding accepts symbol keys there too (qdrouterd sends them),
and they compare equal to ``str``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, List, Tuple

from .amqp_types import MessageFormatError, section_descriptor, skip_value, truncated
from .decoder import decode_value
from .encoder import AmqpEncodeError, encode_into
from .values import Symbol, Timestamp, UByte, UInt

__all__ = ["AMQP_DATA", "AMQP_SEQUENCE", "AMQP_VALUE", "Header", "Message", "Properties",
           "decode_message", "encode_message"]

HEADER, DELIVERY_ANNOTATIONS, MESSAGE_ANNOTATIONS, PROPERTIES = 0x70, 0x71, 0x72, 0x73
APPLICATION_PROPERTIES, DATA, AMQP_SEQUENCE_CODE, AMQP_VALUE_CODE, FOOTER = 0x74, 0x75, 0x76, 0x77, 0x78
# Body kinds: Message.body_kind.
AMQP_VALUE = "amqp-value"
AMQP_DATA = "data"
AMQP_SEQUENCE = "amqp-sequence"


@dataclass
class Header:
    durable: bool | None = None
    priority: int | None = None
    ttl: int | None = None
    first_acquirer: bool | None = None
    delivery_count: int | None = None


@dataclass
class Properties:
    message_id: Any = None
    user_id: bytes | None = None
    to: str | None = None
    subject: str | None = None
    reply_to: str | None = None
    correlation_id: Any = None
    content_type: str | None = None
    content_encoding: str | None = None
    absolute_expiry_time: int | None = None
    creation_time: int | None = None
    group_id: str | None = None
    group_sequence: int | None = None
    reply_to_group_id: str | None = None


@dataclass
class Message:
    """One message. ``body`` is the amqp-value's value, the list of data sections' bytes, or
    the list of amqp-sequence sections' lists, as ``body_kind`` says (None: no body)."""

    header: Header | None = None
    delivery_annotations: Dict[Any, Any] | None = None
    annotations: Dict[Any, Any] | None = None
    properties: Properties | None = None
    application_properties: Dict[Any, Any] | None = None
    body: Any = None
    body_kind: str | None = AMQP_VALUE
    footer: Dict[Any, Any] | None = None

    @property
    def to(self) -> Any:
        return self.properties.to if self.properties is not None else None

    @property
    def reply_to(self) -> Any:
        return self.properties.reply_to if self.properties is not None else None


# ---- encoding -------------------------------------------------------------------------------
# Each header and properties field's AMQP type, as its wrapper (None: the value as given).
_HEADER_TYPES = (bool, UByte, UInt, bool, UInt)
_PROPERTY_TYPES = (None, bytes, str, str, str, None, Symbol, Symbol, Timestamp, Timestamp, str, UInt, str)


def encode_message(message: Message) -> bytes:
    """The message's sections, encoded (raises AmqpEncodeError for a value with no encoding)."""
    out = bytearray()
    if message.header is not None:
        _section(out, HEADER, _typed_list(message.header, _HEADER_TYPES))
    if message.delivery_annotations is not None:
        _section(out, DELIVERY_ANNOTATIONS, _symbol_keys(message.delivery_annotations))
    if message.annotations is not None:
        _section(out, MESSAGE_ANNOTATIONS, _symbol_keys(message.annotations))
    if message.properties is not None:
        _section(out, PROPERTIES, _typed_list(message.properties, _PROPERTY_TYPES))
    if message.application_properties is not None:
        _section(out, APPLICATION_PROPERTIES, message.application_properties)
    kind = message.body_kind
    if kind == AMQP_VALUE:
        _section(out, AMQP_VALUE_CODE, message.body)
    elif kind == AMQP_DATA:
        for chunk in message.body:
            _section(out, DATA, bytes(chunk))
    elif kind == AMQP_SEQUENCE:
        for sequence in message.body:
            _section(out, AMQP_SEQUENCE_CODE, list(sequence))
    elif kind is not None:
        raise AmqpEncodeError(f"unknown body kind {kind!r}")
    if message.footer is not None:
        _section(out, FOOTER, _symbol_keys(message.footer))
    return bytes(out)


def _section(out: bytearray, code: int, value: Any) -> None:
    out += bytes((0x00, 0x53, code))
    encode_into(value, out)


def _symbol_keys(annotations: Dict[Any, Any]) -> Dict[Any, Any]:
    return {Symbol(key) if type(key) is str else key: value for key, value in annotations.items()}


def _typed_list(record: Any, types: Tuple[Any, ...]) -> List[Any]:
    """A header's or properties' fields as a list, each of its AMQP type, trailing nulls left out."""
    values = [getattr(record, each.name) for each in fields(record)]
    while values and values[-1] is None:
        values.pop()
    for index, value in enumerate(values):
        kind = types[index]
        if value is not None and kind is not None and type(value) is not kind:
            values[index] = kind(value)
    return values


# ---- decoding -------------------------------------------------------------------------------
_BODY_CODES = {DATA: AMQP_DATA, AMQP_SEQUENCE_CODE: AMQP_SEQUENCE, AMQP_VALUE_CODE: AMQP_VALUE}


def decode_message(raw: bytes, *, with_body: bool = True) -> Message:
    """The message encoded in ``raw`` (every byte of it); MessageFormatError if it is not one.
    ``with_body=False`` checks the body and footer sections' framing without building their
    values (body None): what a reply to an oversized request needs costs no more than that."""
    message = Message(body_kind=None)
    last = HEADER - 1
    body_parts: List[Any] = []
    pos = 0
    end = len(raw)
    while pos < end:
        code, value_pos = _section_start(raw, pos)
        repeat = code == last and code in (DATA, AMQP_SEQUENCE_CODE)
        if code < last or (code == last and not repeat) or (
                code in _BODY_CODES and message.body_kind not in (None, _BODY_CODES[code])):
            raise MessageFormatError(f"AMQP section 0x{code:x} at offset {pos} is out of order")
        if value_pos >= end:
            raise truncated(value_pos)
        if not with_body and code >= DATA:
            pos = skip_value(raw, value_pos)
            last = code
            message.body_kind = _BODY_CODES.get(code, message.body_kind)
            continue
        value, pos = decode_value(raw, value_pos)
        last = code
        if code == HEADER:
            message.header = Header(*_fields(value, 5, "header", value_pos))
        elif code == DELIVERY_ANNOTATIONS:
            message.delivery_annotations = _map(value, "delivery-annotations", value_pos)
        elif code == MESSAGE_ANNOTATIONS:
            message.annotations = _map(value, "message-annotations", value_pos)
        elif code == PROPERTIES:
            message.properties = Properties(*_fields(value, 13, "properties", value_pos))
        elif code == APPLICATION_PROPERTIES:
            message.application_properties = _map(value, "application-properties", value_pos)
        elif code == FOOTER:
            message.footer = _map(value, "footer", value_pos)
        elif code == AMQP_VALUE_CODE:
            message.body_kind = AMQP_VALUE
            message.body = value
        else:
            if code == DATA and not isinstance(value, bytes):
                raise MessageFormatError(f"AMQP data section at offset {value_pos} is not binary")
            if code == AMQP_SEQUENCE_CODE and not isinstance(value, list):
                raise MessageFormatError(f"AMQP sequence section at offset {value_pos} is not a list")
            message.body_kind = _BODY_CODES[code]
            body_parts.append(value)
            message.body = body_parts
    return message


def _section_start(raw: bytes, pos: int) -> Tuple[int, int]:
    """(section code, offset of its value) of the section starting at ``pos``."""
    try:
        if raw[pos] != 0x00:
            raise MessageFormatError(f"expected an AMQP section at offset {pos}")
        code, value_pos = section_descriptor(raw, pos + 1)
    except IndexError:
        raise truncated(pos) from None
    if not HEADER <= code <= FOOTER:
        raise MessageFormatError(f"unknown AMQP section at offset {pos}")
    return code, value_pos


def _fields(value: Any, most: int, what: str, at: int) -> List[Any]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > most:
        raise MessageFormatError(f"AMQP {what} at offset {at} is not a list of at most {most} fields")
    return value


def _map(value: Any, what: str, at: int) -> Dict[Any, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MessageFormatError(f"AMQP {what} at offset {at} is not a map")
    return value

