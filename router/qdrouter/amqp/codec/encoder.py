"""Python values to AMQP 1.0 encoded bytes, with no limit on how many values one holds.

Plain Python values get the AMQP types proton's Python binding gives them (None -> null,
bool -> boolean, int -> long, float -> double, str -> string, bytes/bytearray/memoryview ->
binary, list/tuple -> list, dict -> map, uuid.UUID -> uuid), so a reply encoded here decodes
as it did when proton encoded it; the wrappers of types.py ask for any other type. Each value
takes its most compact encoding (smalllong, list8, str8 ...), as proton-C's encoder does.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable, Dict, List, Tuple

from .values import (
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

__all__ = ["AmqpEncodeError", "encode_into", "encode_value"]

_MAX_SIZE = 2**32 - 1


class AmqpEncodeError(ValueError):
    """A value that has no AMQP encoding (an unknown type, an int out of its type's range)."""


def encode_value(value: Any) -> bytes:
    """The AMQP encoding of ``value`` (raises AmqpEncodeError for what cannot be encoded)."""
    out = bytearray()
    encode_into(value, out)
    return bytes(out)


def encode_into(value: Any, out: bytearray) -> None:
    """Append the AMQP encoding of ``value`` to ``out``."""
    encoder = _ENCODERS.get(type(value))
    if encoder is None:
        encoder = _encoder_for_subclass(value)
    encoder(value, out)


def _encoder_for_subclass(value: Any) -> Callable[[Any, bytearray], None]:
    # An IntEnum, a str subclass, an OrderedDict ...: encoded as the plain type it extends.
    for base, encoder in _SUBCLASS_ORDER:
        if isinstance(value, base):
            return encoder
    raise AmqpEncodeError(f"no AMQP encoding for a value of type {type(value).__name__}: {value!r:.80}")


def _range_error(value: int, type_name: str) -> AmqpEncodeError:
    return AmqpEncodeError(f"{value} is out of range for AMQP {type_name}")


# ---- scalars ------------------------------------------------------------------------------
def _null(value: Any, out: bytearray) -> None:
    out.append(0x40)


def _bool(value: Any, out: bytearray) -> None:
    out.append(0x41 if value else 0x42)


def _long(value: int, out: bytearray) -> None:
    if -128 <= value <= 127:
        out.append(0x55)
        out.append(value & 0xFF)
    elif -(2**63) <= value < 2**63:
        out.append(0x81)
        out += value.to_bytes(8, "big", signed=True)
    elif 0 <= value < 2**64:  # proton refuses these; a ulong keeps the value
        _ulong(value, out)
    else:
        raise _range_error(value, "long")


def _int32(value: int, out: bytearray) -> None:
    if -128 <= value <= 127:
        out.append(0x54)
        out.append(value & 0xFF)
    elif -(2**31) <= value < 2**31:
        out.append(0x71)
        out += value.to_bytes(4, "big", signed=True)
    else:
        raise _range_error(value, "int")


def _ulong(value: int, out: bytearray) -> None:
    if value == 0:
        out.append(0x44)
    elif 0 < value <= 255:
        out.append(0x53)
        out.append(value)
    elif 0 < value < 2**64:
        out.append(0x80)
        out += value.to_bytes(8, "big")
    else:
        raise _range_error(value, "ulong")


def _uint(value: int, out: bytearray) -> None:
    if value == 0:
        out.append(0x43)
    elif 0 < value <= 255:
        out.append(0x52)
        out.append(value)
    elif 0 < value < 2**32:
        out.append(0x70)
        out += value.to_bytes(4, "big")
    else:
        raise _range_error(value, "uint")


def _fixed(code: int, width: int, signed: bool, type_name: str) -> Callable[[int, bytearray], None]:
    def encode(value: int, out: bytearray) -> None:
        try:
            payload = int(value).to_bytes(width, "big", signed=signed)
        except OverflowError:
            raise _range_error(value, type_name) from None
        out.append(code)
        out += payload
    return encode


def _double(value: float, out: bytearray) -> None:
    out.append(0x82)
    out += struct.pack(">d", value)


def _float32(value: float, out: bytearray) -> None:
    out.append(0x72)
    try:
        out += struct.pack(">f", value)
    except OverflowError:
        raise _range_error(value, "float") from None  # type: ignore[arg-type]


def _char(value: str, out: bytearray) -> None:
    if len(value) != 1:
        raise AmqpEncodeError(f"an AMQP char is one code point, not {value!r:.40}")
    out.append(0x73)
    out += ord(value).to_bytes(4, "big")


def _decimal128(value: bytes, out: bytearray) -> None:
    if len(value) != 16:
        raise AmqpEncodeError("an AMQP decimal128 is 16 bytes")
    out.append(0x94)
    out += value


def _uuid(value: uuid.UUID, out: bytearray) -> None:
    out.append(0x98)
    out += value.bytes


def _variable(out: bytearray, code8: int, code32: int, raw: bytes) -> None:
    size = len(raw)
    if size <= 255:
        out.append(code8)
        out.append(size)
    elif size <= _MAX_SIZE:
        out.append(code32)
        out += size.to_bytes(4, "big")
    else:
        raise AmqpEncodeError("a value of 4 GiB or more has no AMQP encoding")
    out += raw


def _string(value: str, out: bytearray) -> None:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        raise AmqpEncodeError(f"string {value!r:.40} is not valid Unicode (a lone surrogate?)") from None
    _variable(out, 0xA1, 0xB1, raw)


def _symbol(value: str, out: bytearray) -> None:
    try:
        raw = value.encode("ascii")
    except UnicodeEncodeError:
        raise AmqpEncodeError(f"an AMQP symbol is ASCII: {value!r:.40}") from None
    _variable(out, 0xA3, 0xB3, raw)


def _binary(value: Any, out: bytearray) -> None:
    _variable(out, 0xA0, 0xB0, bytes(value))


# ---- compounds ----------------------------------------------------------------------------
def _compound_header(out: bytearray, code8: int, code32: int, payload_size: int, count: int) -> None:
    size = payload_size + 1
    if size <= 255 and count <= 255:
        out.append(code8)
        out.append(size)
        out.append(count)
        return
    if payload_size + 4 > _MAX_SIZE:
        raise AmqpEncodeError("a list, map or array of 4 GiB or more has no AMQP encoding")
    out.append(code32)
    out += (payload_size + 4).to_bytes(4, "big")
    out += count.to_bytes(4, "big")


def _list(value: Any, out: bytearray) -> None:
    if not value:
        out.append(0x45)
        return
    body = bytearray()
    encode = encode_into
    for element in value:
        encode(element, body)
    _compound_header(out, 0xC0, 0xD0, len(body), len(value))
    out += body


def _map(value: Dict[Any, Any], out: bytearray) -> None:
    body = bytearray()
    encode = encode_into
    for key, element in value.items():
        encode(key, body)
        encode(element, body)
    _compound_header(out, 0xC1, 0xD1, len(body), 2 * len(value))
    out += body


def _described(value: Described, out: bytearray) -> None:
    out.append(0x00)
    encode_into(value.descriptor, out)
    encode_into(value.value, out)


# ---- arrays: one constructor, then each element's payload alone ---------------------------
def _wide_int(width: int, signed: bool) -> Callable[[Any, bytearray], None]:
    def payload(value: Any, out: bytearray) -> None:
        try:
            out += int(value).to_bytes(width, "big", signed=signed)
        except OverflowError:
            raise AmqpEncodeError(f"{value} is out of range for an array of {width}-byte integers") from None
    return payload


def _sized_payload(size_width: int, raw: bytes, out: bytearray) -> None:
    out += len(raw).to_bytes(size_width, "big")
    out += raw


def _compound_payload(encoded: bytes) -> bytes:
    """The payload of a list32/map32/array32 encoding (its constructor byte dropped)."""
    return encoded[1:]


def _element_raw(element_type: str, value: Any) -> bytes:
    """The bytes a variable-width element carries (binary, string, symbol)."""
    if element_type == "binary":
        return bytes(value)
    if element_type == "symbol":
        try:
            return str(value).encode("ascii")
        except UnicodeEncodeError:
            raise AmqpEncodeError(f"an AMQP symbol is ASCII: {value!r:.40}") from None
    try:
        return str(value).encode("utf-8")
    except UnicodeEncodeError:
        raise AmqpEncodeError(f"string {value!r:.40} is not valid Unicode") from None


_VARIABLE_CODES = {"binary": (0xA0, 0xB0), "string": (0xA1, 0xB1), "symbol": (0xA3, 0xB3)}
_FIXED_ELEMENTS: Dict[str, Tuple[int, Callable[[Any, bytearray], None]]] = {
    "boolean": (0x56, lambda v, out: out.append(1 if v else 0)),
    "ubyte": (0x50, _wide_int(1, False)),
    "ushort": (0x60, _wide_int(2, False)),
    "uint": (0x70, _wide_int(4, False)),
    "ulong": (0x80, _wide_int(8, False)),
    "byte": (0x51, _wide_int(1, True)),
    "short": (0x61, _wide_int(2, True)),
    "int": (0x71, _wide_int(4, True)),
    "long": (0x81, _wide_int(8, True)),
    "timestamp": (0x83, _wide_int(8, True)),
    "decimal32": (0x74, _wide_int(4, False)),
    "decimal64": (0x84, _wide_int(8, False)),
    "float": (0x72, lambda v, out: out.extend(struct.pack(">f", v))),
    "double": (0x82, lambda v, out: out.extend(struct.pack(">d", v))),
    "char": (0x73, lambda v, out: out.extend(ord(v).to_bytes(4, "big"))),
    "uuid": (0x98, lambda v, out: out.extend(v.bytes)),
    "decimal128": (0x94, lambda v, out: out.extend(bytes(v))),
}


def _array(value: Array, out: bytearray) -> None:
    body = bytearray()
    if value.descriptor is not None:
        body.append(0x00)
        encode_into(value.descriptor, body)
    kind = value.element_type
    elements = value.elements
    try:
        if kind == "null":
            body.append(0x40)
        elif kind in _VARIABLE_CODES:
            raws = [_element_raw(kind, element) for element in elements]
            wide = any(len(raw) > 255 for raw in raws)
            body.append(_VARIABLE_CODES[kind][1 if wide else 0])
            for raw in raws:
                _sized_payload(4 if wide else 1, raw, body)
        elif kind in ("list", "map", "array"):
            body.append({"list": 0xD0, "map": 0xD1, "array": 0xF0}[kind])
            for element in elements:
                body += _compound_payload(_wide_compound(kind, element))
        else:
            code, payload = _FIXED_ELEMENTS[kind]
            body.append(code)
            for element in elements:
                payload(element, body)
    except (TypeError, AttributeError, struct.error) as error:
        raise AmqpEncodeError(f"an element of an AMQP array of {kind} does not fit: {error}") from None
    _compound_header(out, 0xE0, 0xF0, len(body), len(elements))
    out += body


def _wide_compound(kind: str, value: Any) -> bytes:
    """``value`` as list32 / map32 / array32 (arrays need one width for all their elements)."""
    body = bytearray()
    if kind == "array":
        _array(value, body)
        if body[0] == 0xF0:
            return bytes(body)
        size, count = body[1], body[2]  # widen an array8
        return b"\xf0" + (size + 3).to_bytes(4, "big") + count.to_bytes(4, "big") + bytes(body[3:])
    items: List[Any] = value if kind == "list" else [x for pair in value.items() for x in pair]
    for item in items:
        encode_into(item, body)
    code = 0xD0 if kind == "list" else 0xD1
    return bytes((code,)) + (len(body) + 4).to_bytes(4, "big") + len(items).to_bytes(4, "big") + bytes(body)


_ENCODERS: Dict[type, Callable[[Any, bytearray], None]] = {
    type(None): _null,
    bool: _bool,
    int: _long,
    float: _double,
    str: _string,
    bytes: _binary,
    bytearray: _binary,
    memoryview: _binary,
    list: _list,
    tuple: _list,
    dict: _map,
    uuid.UUID: _uuid,
    Symbol: _symbol,
    Char: _char,
    UByte: _fixed(0x50, 1, False, "ubyte"),
    UShort: _fixed(0x60, 2, False, "ushort"),
    UInt: _uint,
    ULong: _ulong,
    Byte: _fixed(0x51, 1, True, "byte"),
    Short: _fixed(0x61, 2, True, "short"),
    Int: _int32,
    Timestamp: _fixed(0x83, 8, True, "timestamp"),
    Float: _float32,
    Decimal32: _fixed(0x74, 4, False, "decimal32"),
    Decimal64: _fixed(0x84, 8, False, "decimal64"),
    Decimal128: _decimal128,
    Described: _described,
    Array: _array,
}
# Subclasses of the plain types (IntEnum, OrderedDict, ...), most specific first.
_SUBCLASS_ORDER: List[Tuple[type, Callable[[Any, bytearray], None]]] = [
    (bool, _bool), (int, _long), (float, _double), (str, _string),
    (bytes, _binary), (bytearray, _binary), (list, _list), (tuple, _list), (dict, _map),
]
