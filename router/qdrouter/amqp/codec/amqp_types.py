"""Minimal AMQP 1.0 type-system helpers for the message hot path.

Pure Python on purpose (no proton import): the router only needs to *skip*
encoded values, read a handful of strings/ints/string-lists, and encode a few
small values (symbols, strings, string lists, ints, maps/lists of raw bytes).
Everything works on ``bytes`` (or ``bytearray``) with integer offsets so that
no intermediate objects are created unless a value is actually extracted.

All functions raise :class:`MessageFormatError` on malformed or truncated
input; no ``IndexError`` may leak to callers.
"""

from __future__ import annotations

__all__ = [
    "MessageFormatError",
    "encode_int",
    "encode_list",
    "encode_map",
    "encode_string",
    "encode_string_list",
    "encode_symbol",
    "read_int",
    "read_str",
    "read_str_list",
    "skip_value",
]


class MessageFormatError(ValueError):
    """The encoded message is malformed or truncated."""


# Skip table indexed by format code. >= 0: fixed width of the value after the
# code byte; SIZE1 / SIZE4: a 1- or 4-byte size follows, then that many
# bytes (variable-width, compound and array types all skip the same way);
# _BAD: not a valid constructor here (0x00 is handled by the caller).
SIZE1 = -1
SIZE4 = -4
_BAD = -9
WIDTH = [_BAD] * 256
for _c in range(0x40, 0x46):
    WIDTH[_c] = 0
for _c in range(0x50, 0x57):
    WIDTH[_c] = 1
for _c in (0x60, 0x61):
    WIDTH[_c] = 2
for _c in range(0x70, 0x75):
    WIDTH[_c] = 4
for _c in range(0x80, 0x85):
    WIDTH[_c] = 8
for _c in (0x94, 0x98):
    WIDTH[_c] = 16
for _c in (0xA0, 0xA1, 0xA3, 0xC0, 0xC1, 0xE0):
    WIDTH[_c] = SIZE1
for _c in (0xB0, 0xB1, 0xB3, 0xD0, 0xD1, 0xF0):
    WIDTH[_c] = SIZE4
del _c


def truncated(pos: int) -> MessageFormatError:
    return MessageFormatError(f"truncated AMQP data at offset {pos}")


def u32(data: bytes, pos: int) -> int:
    """Big-endian uint32 at pos; shifts instead of struct/int.from_bytes to avoid a slice."""
    return (data[pos] << 24) | (data[pos + 1] << 16) | (data[pos + 2] << 8) | data[pos + 3]


def _skip_plain(data: bytes, pos: int, code: int) -> int:
    """End offset of the non-described value whose constructor ``code`` is at ``pos``."""
    w = WIDTH[code]
    if w >= 0:
        end = pos + 1 + w
    elif w == SIZE1:
        end = pos + 2 + data[pos + 1]
    elif w == SIZE4:
        end = pos + 5 + u32(data, pos + 1)
    else:
        raise MessageFormatError(f"invalid AMQP type code 0x{code:02x} at offset {pos}")
    if end > len(data):
        raise truncated(pos)
    return end


def skip_value(data: bytes, pos: int) -> int:
    """Return the offset just after the encoded value starting at ``pos``.

    Described values (0x00 descriptor value) are handled iteratively; a
    descriptor must itself be a plain value, which keeps the walk free of
    recursion so hostile input cannot exhaust the stack.
    """
    if pos < 0:
        raise MessageFormatError(f"negative offset {pos}")
    try:
        code = data[pos]
        while code == 0:
            pos += 1
            pos = _skip_plain(data, pos, data[pos])
            code = data[pos]
        return _skip_plain(data, pos, code)
    except IndexError:
        raise truncated(pos) from None


def value_span(data: bytes, pos: int, limit: int) -> tuple[int, int]:
    """(content_start, content_end) of a str/sym/binary value at pos, or (-1, -1) for other types."""
    code = data[pos]
    if code == 0xA1 or code == 0xA3 or code == 0xA0:
        start = pos + 2
        end = start + data[pos + 1]
    elif code == 0xB1 or code == 0xB3 or code == 0xB0:
        start = pos + 5
        end = start + u32(data, pos + 1)
    else:
        return -1, -1
    if end > limit:
        raise truncated(pos)
    return start, end


def _decode(data: bytes, start: int, end: int) -> str:
    try:
        return str(data[start:end], "utf-8")
    except UnicodeDecodeError as e:
        raise MessageFormatError(f"invalid UTF-8 at offset {start}: {e}") from None


def read_str(data: bytes, pos: int, limit: int) -> str | None:
    """str8/str32/sym8/sym32 at pos as str; None for null or any other type (ignored, not an error)."""
    try:
        code = data[pos]
        if code == 0xA0 or code == 0xB0:  # binary is not a string
            return None
        start, end = value_span(data, pos, limit)
    except IndexError:
        raise truncated(pos) from None
    if start < 0:
        return None
    return _decode(data, start, end)


_INT_CODES = {
    # code: (width, signed)
    0x50: (1, False), 0x51: (1, True), 0x52: (1, False), 0x53: (1, False),
    0x54: (1, True), 0x55: (1, True), 0x60: (2, False), 0x61: (2, True),
    0x70: (4, False), 0x71: (4, True), 0x80: (8, False), 0x81: (8, True),
}  # fmt: skip


def read_int(data: bytes, pos: int, limit: int) -> int | None:
    """Any AMQP integer type at pos as int; None for null or non-integer types."""
    try:
        code = data[pos]
    except IndexError:
        raise truncated(pos) from None
    if code == 0x43 or code == 0x44:  # uint0 / ulong0
        return 0
    spec = _INT_CODES.get(code)
    if spec is None:
        return None
    end = pos + 1 + spec[0]
    if end > limit:
        raise truncated(pos)
    return int.from_bytes(data[pos + 1 : end], "big", signed=spec[1])


def read_str_list(data: bytes, pos: int, limit: int) -> list[str] | None:
    """A list or array of str/sym at pos as list[str]; None for null, other types or non-string elements."""
    try:
        code = data[pos]
        if code == 0x45:
            return []
        if code == 0xC0 or code == 0xE0:
            end = pos + 2 + data[pos + 1]
            count = data[pos + 2]
            p = pos + 3
        elif code == 0xD0 or code == 0xF0:
            end = pos + 5 + u32(data, pos + 1)
            count = u32(data, pos + 5)
            p = pos + 9
        else:
            return None
        if end > limit:
            raise truncated(pos)
        out: list[str] = []
        if code >= 0xE0:  # array: one shared constructor, then bare element payloads
            if count == 0:
                return out
            ctor = data[p]
            p += 1
            if ctor == 0xA1 or ctor == 0xA3:
                wide = False
            elif ctor == 0xB1 or ctor == 0xB3:
                wide = True
            else:
                return None
            for _ in range(count):
                if wide:
                    s, p = p + 4, p + 4 + u32(data, p)
                else:
                    s, p = p + 1, p + 1 + data[p]
                if p > end:
                    raise truncated(s)
                out.append(_decode(data, s, p))
        else:
            for _ in range(count):
                if p >= end:
                    raise truncated(p)
                s, e = value_span(data, p, end)
                if s < 0 or data[p] == 0xA0 or data[p] == 0xB0:
                    return None
                out.append(_decode(data, s, e))
                p = e
        if p != end:
            raise MessageFormatError(f"list at offset {pos} has trailing bytes")
        return out
    except IndexError:
        raise truncated(pos) from None


# ---------------------------------------------------------------- sections

HEADER = 0x70
DELIVERY_ANNOTATIONS = 0x71
MESSAGE_ANNOTATIONS = 0x72
PROPERTIES = 0x73
FOOTER = 0x78

# Symbolic section descriptors are legal (if rare); map them to their codes.
_SECTION_NAMES = {
    b"amqp:header:list": 0x70,
    b"amqp:delivery-annotations:map": 0x71,
    b"amqp:message-annotations:map": 0x72,
    b"amqp:properties:list": 0x73,
    b"amqp:application-properties:map": 0x74,
    b"amqp:data:binary": 0x75,
    b"amqp:amqp-sequence:list": 0x76,
    b"amqp:amqp-value:*": 0x77,
    b"amqp:footer:map": 0x78,
}


def section_descriptor(data: bytes, pos: int) -> tuple[int, int]:
    """(section code, value offset) for the descriptor at ``pos`` (just after the 0x00).

    Slow path for anything but smallulong; returns code 0 for descriptors that
    are no message section so callers reject them.
    """
    code = data[pos]
    if code == 0x53:
        return data[pos + 1], pos + 2
    if code == 0x80:
        end = pos + 9
        if end > len(data):
            raise truncated(pos)
        value = int.from_bytes(data[pos + 1 : end], "big")
        return (value if HEADER <= value <= FOOTER else 0), end
    if code == 0xA3 or code == 0xB3:
        if code == 0xA3:
            start = pos + 2
            end = start + data[pos + 1]
        else:
            start = pos + 5
            end = start + u32(data, pos + 1)
        if end > len(data):
            raise truncated(pos)
        return _SECTION_NAMES.get(bytes(data[start:end]), 0), end
    if code == 0x44:  # ulong0
        return 0, pos + 1
    raise MessageFormatError(f"invalid section descriptor type 0x{code:02x} at offset {pos}")


def section_insert_pos(data: bytes) -> int:
    """Offset where a new message-annotations section belongs: after header / delivery-annotations."""
    n = len(data)
    pos = 0
    try:
        while pos < n:
            if data[pos] != 0:
                raise MessageFormatError(f"expected a described section at offset {pos}")
            code, vpos = section_descriptor(data, pos + 1)
            if code < HEADER or code > FOOTER:
                raise MessageFormatError(f"unknown section 0x{code:x} at offset {pos}")
            if code >= MESSAGE_ANNOTATIONS:
                return pos
            pos = skip_value(data, vpos)
    except IndexError:
        raise truncated(pos) from None
    return pos


def section_value(data: bytes, start: int, want: int) -> int:
    """Offset of the value of the section at ``start``, checking that it is section ``want``."""
    try:
        if data[start] != 0:
            raise MessageFormatError(f"expected a described section at offset {start}")
        code, vpos = section_descriptor(data, start + 1)
    except IndexError:
        raise truncated(start) from None
    if code != want:
        raise MessageFormatError(f"section at offset {start} is 0x{code:x}, expected 0x{want:x}")
    return vpos


# ---------------------------------------------------------------- encoders


def _encode_var(raw: bytes, code8: int, code32: int) -> bytes:
    n = len(raw)
    if n <= 255:
        return bytes((code8, n)) + raw
    return bytes((code32,)) + n.to_bytes(4, "big") + raw


def encode_symbol(value: str) -> bytes:
    """sym8/sym32 (symbols are ASCII by definition)."""
    try:
        raw = value.encode("ascii")
    except UnicodeEncodeError:
        raise ValueError(f"symbol must be ASCII: {value!r}") from None
    return _encode_var(raw, 0xA3, 0xB3)


def encode_string(value: str) -> bytes:
    """str8-utf8/str32-utf8."""
    return _encode_var(value.encode("utf-8"), 0xA1, 0xB1)


def encode_list(elements: bytes, count: int) -> bytes:
    """list0/list8/list32 around already-encoded ``elements`` (``count`` values)."""
    if count == 0:
        return b"\x45"
    size = len(elements) + 1
    if size <= 255 and count <= 255:
        return bytes((0xC0, size, count)) + elements
    return b"\xd0" + (size + 3).to_bytes(4, "big") + count.to_bytes(4, "big") + elements


def encode_string_list(values: list[str]) -> bytes:
    """A list of str8/str32 (the x-opt-qd.trace encoding)."""
    return encode_list(b"".join([encode_string(v) for v in values]), len(values))


def map_header(payload_len: int, count: int) -> bytes:
    """map8 header when it fits, else map32; ``count`` is keys + values."""
    size = payload_len + 1
    if size <= 255 and count <= 255:
        return bytes((0xC1, size, count))
    return b"\xd1" + (size + 3).to_bytes(4, "big") + count.to_bytes(4, "big")


def encode_map(entries: list[bytes]) -> bytes:
    """A map from already-encoded key+value byte strings (one element per pair)."""
    payload = b"".join(entries)
    return map_header(len(payload), 2 * len(entries)) + payload


def encode_int(value: int) -> bytes:
    """smallint when it fits (as the C router's compose does), else int; long beyond 32 bits."""
    if -128 <= value <= 127:
        return bytes((0x54, value & 0xFF))
    if -(2**31) <= value < 2**31:
        return b"\x71" + value.to_bytes(4, "big", signed=True)
    return b"\x81" + value.to_bytes(8, "big", signed=True)
