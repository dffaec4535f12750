"""The router's own message annotations (``x-opt-qd.*``, book 3.3.1) in an encoded
message: read from, and spliced into, its message-annotations section without re-encoding
anything else (message_sections.py finds the sections).

Pure Python, no proton import, CPython 3.9+ and PyPy.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from .amqp_types import (
    MESSAGE_ANNOTATIONS,
    SIZE1,
    SIZE4,
    WIDTH,
    MessageFormatError,
    encode_int,
    encode_list,
    encode_string,
    encode_string_list,
    encode_symbol,
    map_header,
    read_int,
    read_str,
    read_str_list,
    section_insert_pos,
    section_value,
    skip_value,
    truncated,
    u32,
)

__all__ = ["Annotations", "read_annotations", "rewrite_annotations"]

QD_PREFIX = b"x-opt-qd."
_K_TO = b"x-opt-qd.to"
_K_INGRESS = b"x-opt-qd.ingress"
_K_TRACE = b"x-opt-qd.trace"
_K_PHASE = b"x-opt-qd.phase"
# Pre-encoded symbol keys for entries we add.
_ENC_TO = encode_symbol("x-opt-qd.to")
_ENC_INGRESS = encode_symbol("x-opt-qd.ingress")
_ENC_PHASE = encode_symbol("x-opt-qd.phase")
_ENC_TRACE = encode_symbol("x-opt-qd.trace")
_NEW_MA_DESCRIPTOR = b"\x00\x53\x72"
# Above this size the untouched head/tail are joined through a memoryview so
# a large body is copied once, not twice (slice + join).
_ZERO_COPY_MIN = 2048


class Annotations(NamedTuple):
    """The router's own keys from a message-annotations section (book 3.3.1)."""

    to_override: str | None  # x-opt-qd.to
    ingress: str | None  # x-opt-qd.ingress
    trace: list[str] | None  # x-opt-qd.trace
    phase: int | None  # x-opt-qd.phase
    has_other_qd_keys: bool  # any other key starting with "x-opt-qd."


_NO_ANNOTATIONS = Annotations(None, None, None, None, False)

# (entry_start, key_end, entry_end, qd_key) per map entry; qd_key is the key's
# bytes when it starts with "x-opt-qd.", else None.
_Entry = tuple[int, int, int, Optional[bytes]]


def _parse_ma(data: bytes, ma_start: int, ma_end: int) -> tuple[int, list[_Entry]]:
    """(map_offset, entries) of the message-annotations section data[ma_start:ma_end]."""
    mpos = section_value(data, ma_start, MESSAGE_ANNOTATIONS)
    entries: list[_Entry] = []
    try:
        code = data[mpos]
        if code == 0xC1:
            end = mpos + 2 + data[mpos + 1]
            count = data[mpos + 2]
            p = mpos + 3
        elif code == 0xD1:
            end = mpos + 5 + u32(data, mpos + 1)
            count = u32(data, mpos + 5)
            p = mpos + 9
        elif code == 0x40:  # null annotations: treat as an empty map
            end = mpos + 1
            count = 0
            p = end
        else:
            raise MessageFormatError(f"message-annotations at offset {ma_start} is not a map")
        if end != ma_end or end > len(data):
            raise MessageFormatError(f"message-annotations section size mismatch at offset {ma_start}")
        if count & 1:
            raise MessageFormatError(f"odd map count {count} at offset {mpos}")
        # Per-entry work is inlined (table lookups instead of skip_value calls)
        # because every message crossing an inter-router link has annotations.
        width = WIDTH
        for _ in range(count >> 1):
            if p >= end:
                raise truncated(p)
            kcode = data[p]
            if kcode == 0xA3 or kcode == 0xA1:  # symbol keys per spec; tolerate strings
                ks = p + 2
                ke = ks + data[p + 1]
            elif kcode == 0xB3 or kcode == 0xB1:
                ks = p + 5
                ke = ks + u32(data, p + 1)
            else:
                ks = -1
                ke = skip_value(data, p)
            w = width[data[ke]]
            if w >= 0:
                ve = ke + 1 + w
            elif w == SIZE1:
                ve = ke + 2 + data[ke + 1]
            elif w == SIZE4:
                ve = ke + 5 + u32(data, ke + 1)
            else:
                ve = skip_value(data, ke)
            if ve > end:  # also covers a key running past the map
                raise truncated(p)
            # 0x78 == "x": a cheap pre-filter before the prefix comparison
            if ks >= 0 and data[ks] == 0x78 and data.startswith(QD_PREFIX, ks, ke):
                entries.append((p, ke, ve, data[ks:ke]))
            else:
                entries.append((p, ke, ve, None))
            p = ve
        if p != end:
            raise MessageFormatError(f"message-annotations map at offset {mpos} has trailing bytes")
    except IndexError:
        raise truncated(mpos) from None
    return mpos, entries


def read_annotations(data: bytes, ma_start: int, ma_end: int) -> Annotations:
    """The x-opt-qd.* values of the message-annotations section (all None if ma_start == -1).

    Values of an unexpected type (e.g. a numeric ingress) read as None.
    """
    if ma_start < 0:
        return _NO_ANNOTATIONS
    _, entries = _parse_ma(data, ma_start, ma_end)
    to: str | None = None
    ingress: str | None = None
    trace: list[str] | None = None
    phase: int | None = None
    other = False
    for _es, ke, ve, qd in entries:
        if qd is None:
            continue
        if qd == _K_TO:
            to = read_str(data, ke, ve)
        elif qd == _K_INGRESS:
            ingress = read_str(data, ke, ve)
        elif qd == _K_TRACE:
            trace = read_str_list(data, ke, ve)
        elif qd == _K_PHASE:
            phase = read_int(data, ke, ve)
        else:
            other = True
    return Annotations(to, ingress, trace, phase, other)


def _append_trace(data: bytes, vpos: int, vend: int, node_id: str) -> bytes | None:
    """The trace value at data[vpos:vend] with node_id appended; None if it is not a list.

    A list keeps its element bytes verbatim; an array of strings is re-encoded as a list.
    """
    code = data[vpos]
    if code == 0x45:
        elements, count = b"", 0
    elif code == 0xC0:
        elements, count = data[vpos + 3 : vend], data[vpos + 2]
    elif code == 0xD0:
        elements, count = data[vpos + 9 : vend], u32(data, vpos + 5)
    else:
        items = read_str_list(data, vpos, vend)
        if items is None:
            return None
        items.append(node_id)
        return encode_string_list(items)
    return encode_list(bytes(elements) + encode_string(node_id), count + 1)


def rewrite_annotations(
    data: bytes,
    ma_start: int,
    ma_end: int,
    *,
    strip_qd: bool,
    keep_to_override: bool,
    ingress: str | None,
    trace_append: str | None,
    to_override: str | None = None,
    phase: int | None = None,
    trace_create: bool = False,
) -> bytes:
    """The whole message with its message-annotations section rewritten.

    - strip_qd: drop every "x-opt-qd." key (except x-opt-qd.to when keep_to_override);
    - ingress: add x-opt-qd.ingress = ingress unless present (after stripping);
    - trace_append: append to x-opt-qd.trace if present (after stripping) and a list;
    - to_override / phase: set or replace x-opt-qd.to / x-opt-qd.phase (None: leave as is);
    - trace_create: with trace_append, start x-opt-qd.trace = [trace_append] when absent
      (what a router does when a message first leaves it for another router).

    Other entries are kept byte for byte and in order; replaced entries keep
    their position, added ones go last. An empty result removes the section; a
    missing section is inserted after header / delivery-annotations. Returns
    ``data`` itself when nothing changes.
    """
    if ma_start < 0:
        if ingress is None and to_override is None and phase is None and not (trace_create and trace_append):
            return data  # nothing to add, and trace_append needs an existing trace
        start = end = section_insert_pos(data)
        descriptor: bytes = _NEW_MA_DESCRIPTOR
        entries: list[_Entry] = []
    else:
        start, end = ma_start, ma_end
        mpos, entries = _parse_ma(data, ma_start, ma_end)
        descriptor = data[ma_start:mpos]

    parts: list[bytes] = []
    changed = False
    has_ingress = has_to = has_phase = has_trace = False
    for es, ke, ve, qd in entries:
        if qd is not None:
            if strip_qd and not (keep_to_override and qd == _K_TO):
                changed = True
                continue
            if qd == _K_TO:
                has_to = True
                if to_override is not None:
                    parts.append(_ENC_TO + encode_string(to_override))
                    changed = True
                    continue
            elif qd == _K_INGRESS:
                has_ingress = True
            elif qd == _K_PHASE:
                has_phase = True
                if phase is not None:
                    parts.append(_ENC_PHASE + encode_int(phase))
                    changed = True
                    continue
            elif qd == _K_TRACE and trace_append is not None:
                has_trace = True
                try:
                    new_trace = _append_trace(data, ke, ve, trace_append)
                except IndexError:
                    raise truncated(ke) from None
                if new_trace is not None:
                    parts.append(data[es:ke] + new_trace)
                    changed = True
                    continue
        parts.append(data[es:ve])
    added = _add_missing(parts, None if has_to else to_override, None if has_ingress else ingress,
                         None if has_phase else phase,
                         trace_append if trace_create and not has_trace else None)
    if not (changed or added):
        return data
    return _splice(data, start, end, descriptor, parts)


def _add_missing(parts: list[bytes], to: str | None, ingress: str | None, phase: int | None,
                 trace: str | None) -> bool:
    """Entries the section lacks, added last (None: not added); True when any was."""
    count = len(parts)
    if to is not None:
        parts.append(_ENC_TO + encode_string(to))
    if ingress is not None:
        parts.append(_ENC_INGRESS + encode_string(ingress))
    if phase is not None:
        parts.append(_ENC_PHASE + encode_int(phase))
    if trace is not None:
        parts.append(_ENC_TRACE + encode_string_list([trace]))
    return len(parts) > count


def _splice(data: bytes, start: int, end: int, descriptor: bytes, parts: list[bytes]) -> bytes:
    """``data`` with ``data[start:end]`` replaced by a message-annotations section of the
    encoded map entries ``parts`` (none: no section)."""
    # Only for immutable bytes: a memoryview export would block resizing a caller's
    # bytearray until collected (not immediate on PyPy).
    big = len(data) >= _ZERO_COPY_MIN and type(data) is bytes
    src: bytes | memoryview = memoryview(data) if big else data
    if not parts:
        return b"".join((src[:start], src[end:]))
    payload_len = 0
    for part in parts:
        payload_len += len(part)
    header = map_header(payload_len, 2 * len(parts))
    return b"".join((src[:start], descriptor, header, *parts, src[end:]))
