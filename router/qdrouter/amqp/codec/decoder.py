"""AMQP 1.0 encoded bytes to Python values: every primitive type, list0/8/32, maps, arrays
and described values, with no limit on how many values one holds.

Values come back as proton's Python binding gives them (long -> int, double -> float, string
-> str, binary -> bytes, list -> list, map -> dict, uuid -> uuid.UUID), and the other types as
the wrappers of types.py (a symbol is a Symbol, a str subclass, so ``key == "opcode"`` holds).
Malformed or truncated input raises MessageFormatError, never IndexError: the bytes come from
peers. Nesting deeper than MAX_DEPTH is refused rather than recursed into (a megabyte of
nested list8 headers would exhaust the stack), and a count no payload could hold is refused
before anything is allocated for it.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable, Dict, List, Tuple

from .amqp_types import MessageFormatError, truncated
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

__all__ = ["MAX_DEPTH", "decode_value", "decode_values"]

MAX_DEPTH = 100
_UNPACK_DOUBLE = struct.Struct(">d").unpack_from
_UNPACK_FLOAT = struct.Struct(">f").unpack_from


def decode_value(data: bytes, pos: int = 0, end: int | None = None) -> Tuple[Any, int]:
    """(value, offset after it) of the value encoded at ``data[pos:]``, within ``end``."""
    limit = len(data) if end is None else min(end, len(data))
    if pos < 0 or pos >= limit:
        raise truncated(pos)
    try:
        return _value(data, pos, limit, 0)
    except IndexError:  # a bug guard: every read below checks its bounds first
        raise truncated(pos) from None
    except RecursionError:
        raise MessageFormatError(f"AMQP value at offset {pos} is nested too deeply") from None


def decode_values(data: bytes) -> List[Any]:
    """Every value of ``data``, which must hold whole values and nothing else."""
    values = []
    pos = 0
    while pos < len(data):
        value, pos = decode_value(data, pos)
        values.append(value)
    return values


def _value(data: bytes, pos: int, limit: int, depth: int) -> Tuple[Any, int]:
    code = data[pos]
    if code == 0x00:
        if depth >= MAX_DEPTH:
            raise MessageFormatError(f"AMQP value at offset {pos} is nested deeper than {MAX_DEPTH}")
        if pos + 1 >= limit:
            raise truncated(pos)
        descriptor, pos = _value(data, pos + 1, limit, depth + 1)
        if pos >= limit:
            raise truncated(pos)
        value, pos = _value(data, pos, limit, depth + 1)
        return Described(descriptor, value), pos
    return _payload(code, data, pos + 1, limit, depth)


def _need(pos: int, size: int, limit: int) -> int:
    end = pos + size
    if end > limit:
        raise truncated(pos)
    return end


def _u32(data: bytes, pos: int, limit: int) -> int:
    _need(pos, 4, limit)
    return int.from_bytes(data[pos:pos + 4], "big")


def _payload(code: int, data: bytes, pos: int, limit: int, depth: int) -> Tuple[Any, int]:
    """The value whose constructor ``code`` was just read; its payload starts at ``pos``."""
    fixed = _FIXED.get(code)
    if fixed is not None:
        width, convert = fixed
        end = _need(pos, width, limit)
        return convert(data, pos), end
    if 0xA0 <= code <= 0xB3:
        if code & 0xF0 == 0xA0:
            end = _need(pos, 1, limit)
            size = data[pos]
        else:
            size = _u32(data, pos, limit)
            end = pos + 4
        start, end = end, _need(end, size, limit)
        kind = code & 0x0F
        if kind == 0x00:
            return data[start:end], end
        if kind == 0x01:
            return _text(data, start, end, "string", str), end
        if kind == 0x03:
            return _text(data, start, end, "symbol", Symbol), end
        raise MessageFormatError(f"invalid AMQP type code 0x{code:02x} at offset {pos - 1}")
    if code == 0x45:
        return [], pos
    if code in (0xC0, 0xC1, 0xE0, 0xD0, 0xD1, 0xF0):
        if depth >= MAX_DEPTH:
            raise MessageFormatError(f"AMQP value at offset {pos - 1} is nested deeper than {MAX_DEPTH}")
        if code == 0xC0 or code == 0xC1 or code == 0xE0:
            body = _need(pos, 2, limit)
            size, count = data[pos], data[pos + 1]
            end = _need(pos + 1, size, limit)
        else:
            body = _need(pos, 8, limit)
            size, count = _u32(data, pos, limit), _u32(data, pos + 4, limit)
            end = _need(pos + 4, size, limit)
        if end < body:
            raise MessageFormatError(f"AMQP compound at offset {pos - 1} is smaller than its count")
        if code == 0xE0 or code == 0xF0:
            return _array(data, body, end, count, depth, pos - 1), end
        if code & 0x0F == 0x00:
            return _list(data, body, end, count, depth), end
        return _map(data, body, end, count, depth, pos - 1), end
    raise MessageFormatError(f"invalid AMQP type code 0x{code:02x} at offset {pos - 1}")


def _text(data: bytes, start: int, end: int, what: str, kind: Callable[[str], Any]) -> Any:
    try:
        return kind(data[start:end].decode("utf-8"))
    except UnicodeDecodeError as error:
        raise MessageFormatError(
            f"invalid UTF-8 in an AMQP {what} at offset {start}: {error.reason}") from None


def _check_count(count: int, start: int, end: int, what: str) -> None:
    # Every element takes at least a byte: a larger count is a lie, refused before the loop.
    if count > end - start:
        raise MessageFormatError(
            f"AMQP {what} at offset {start} claims {count} elements in {end - start} bytes")


def _list(data: bytes, pos: int, end: int, count: int, depth: int) -> List[Any]:
    _check_count(count, pos, end, "list")
    out: List[Any] = []
    append = out.append
    for _ in range(count):
        if pos >= end:
            raise truncated(pos)
        value, pos = _value(data, pos, end, depth + 1)
        append(value)
    if pos != end:
        raise MessageFormatError(f"AMQP list ending at offset {end} has trailing bytes")
    return out


def _map(data: bytes, pos: int, end: int, count: int, depth: int, at: int) -> Dict[Any, Any]:
    if count & 1:
        raise MessageFormatError(f"AMQP map at offset {at} has an odd count {count}")
    _check_count(count, pos, end, "map")
    out: Dict[Any, Any] = {}
    for _ in range(count >> 1):
        if pos >= end:
            raise truncated(pos)
        key, pos = _value(data, pos, end, depth + 1)
        if pos >= end:
            raise truncated(pos)
        value, pos = _value(data, pos, end, depth + 1)
        try:
            out[key] = value
        except TypeError:
            raise MessageFormatError(
                f"AMQP map at offset {at} has a key of type {type(key).__name__}, which this "
                "decoder cannot use as a key") from None
    if pos != end:
        raise MessageFormatError(f"AMQP map ending at offset {end} has trailing bytes")
    return out


def _array(data: bytes, pos: int, end: int, count: int, depth: int, at: int) -> Array:
    descriptor = None
    if pos >= end:
        if count == 0:
            raise MessageFormatError(f"AMQP array at offset {at} has no element constructor")
        raise truncated(pos)
    if data[pos] == 0x00:
        if pos + 1 >= end:
            raise truncated(pos)
        descriptor, pos = _value(data, pos + 1, end, depth + 1)
        if pos >= end:
            raise truncated(pos)
    code = data[pos]
    pos += 1
    kind = _ARRAY_KIND.get(code)
    if kind is None:
        raise MessageFormatError(f"invalid AMQP array element constructor 0x{code:02x} at offset {pos - 1}")
    if code in _ZERO_WIDTH:
        # Zero-width elements (null, true, uint0 ...): bound the count by the input's size,
        # or a five-byte array could ask for four billion of them.
        if count > len(data):
            raise MessageFormatError(f"AMQP array at offset {at} claims {count} empty elements")
    else:
        _check_count(count, pos, end, "array")
    elements = []
    for _ in range(count):
        value, pos = _payload(code, data, pos, end, depth + 1)
        elements.append(value)
    if pos != end:
        raise MessageFormatError(f"AMQP array ending at offset {end} has trailing bytes")
    return Array(kind, elements, descriptor)


def _char(data: bytes, pos: int) -> Char:
    point = int.from_bytes(data[pos:pos + 4], "big")
    if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
        raise MessageFormatError(f"AMQP char at offset {pos} is not a Unicode code point: {point:#x}")
    return Char(chr(point))


def _int(kind: Callable[[int], Any], width: int, signed: bool) -> Callable[[bytes, int], Any]:
    def convert(data: bytes, pos: int) -> Any:
        return kind(int.from_bytes(data[pos:pos + width], "big", signed=signed))
    return convert


def _constant(value: Any) -> Callable[[bytes, int], Any]:
    return lambda data, pos: value


# code: (payload width, payload -> value) for every fixed-width constructor.
_FIXED: Dict[int, Tuple[int, Callable[[bytes, int], Any]]] = {
    0x40: (0, _constant(None)),
    0x41: (0, _constant(True)),
    0x42: (0, _constant(False)),
    0x56: (1, lambda data, pos: data[pos] != 0),
    0x50: (1, _int(UByte, 1, False)),
    0x51: (1, _int(Byte, 1, True)),
    0x60: (2, _int(UShort, 2, False)),
    0x61: (2, _int(Short, 2, True)),
    0x43: (0, _constant(UInt(0))),
    0x52: (1, _int(UInt, 1, False)),
    0x70: (4, _int(UInt, 4, False)),
    0x54: (1, _int(Int, 1, True)),
    0x71: (4, _int(Int, 4, True)),
    0x44: (0, _constant(ULong(0))),
    0x53: (1, _int(ULong, 1, False)),
    0x80: (8, _int(ULong, 8, False)),
    0x55: (1, _int(int, 1, True)),
    0x81: (8, _int(int, 8, True)),
    0x83: (8, _int(Timestamp, 8, True)),
    0x72: (4, lambda data, pos: Float(_UNPACK_FLOAT(data, pos)[0])),
    0x82: (8, lambda data, pos: _UNPACK_DOUBLE(data, pos)[0]),
    0x74: (4, _int(Decimal32, 4, False)),
    0x84: (8, _int(Decimal64, 8, False)),
    0x94: (16, lambda data, pos: Decimal128(data[pos:pos + 16])),
    0x73: (4, _char),
    0x98: (16, lambda data, pos: uuid.UUID(bytes=bytes(data[pos:pos + 16]))),
}
_ZERO_WIDTH = frozenset({0x40, 0x41, 0x42, 0x43, 0x44, 0x45})
# The AMQP type an array's element constructor stands for.
_ARRAY_KIND: Dict[int, str] = {
    0x40: "null", 0x41: "boolean", 0x42: "boolean", 0x56: "boolean", 0x50: "ubyte", 0x51: "byte",
    0x60: "ushort", 0x61: "short", 0x43: "uint", 0x52: "uint", 0x70: "uint", 0x54: "int",
    0x71: "int", 0x44: "ulong", 0x53: "ulong", 0x80: "ulong", 0x55: "long", 0x81: "long",
    0x83: "timestamp", 0x72: "float", 0x82: "double", 0x74: "decimal32", 0x84: "decimal64",
    0x94: "decimal128", 0x73: "char", 0x98: "uuid", 0xA0: "binary", 0xB0: "binary",
    0xA1: "string", 0xB1: "string", 0xA3: "symbol", 0xB3: "symbol", 0x45: "list",
    0xC0: "list", 0xD0: "list", 0xC1: "map", 0xD1: "map", 0xE0: "array", 0xF0: "array",
}
