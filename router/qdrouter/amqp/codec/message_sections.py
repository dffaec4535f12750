"""Hot-path access to the sections of an encoded AMQP 1.0 message.

The router forwards messages as raw bytes. It only needs ``properties.to`` and
its own ``x-opt-qd.*`` message annotations (book 3.3.1, read and spliced in
router_annotations.py) to route. Everything here works with byte offsets and
int comparisons; the common case (no message-annotations section) costs a
couple of index operations per leading section.

Pure Python, no proton import, CPython 3.9+ and PyPy.
"""

from __future__ import annotations

from .amqp_types import (
    FOOTER,
    HEADER,
    MESSAGE_ANNOTATIONS,
    PROPERTIES,
    MessageFormatError,
    read_str,
    section_descriptor,
    section_value,
    skip_value,
    truncated,
    u32,
)

__all__ = ["MessageFormatError", "find_sections", "read_to"]


def find_sections(data: bytes) -> tuple[int, int, int]:
    """(ma_start, ma_end, props_start) byte offsets; -1 when a section is absent.

    ``data[ma_start:ma_end]`` is the whole message-annotations section,
    descriptor included. Only header / delivery-annotations /
    message-annotations are walked; the scan stops at the first later section
    (reporting it as props_start when it is the properties section). Empty
    input or a message ending after its leading sections is not an error here.
    Raises MessageFormatError on malformed or truncated input.
    """
    # Fast path for the shapes nearly every message has: [header as list0/list8],
    # then [message annotations as map8/map32, as routers write them], then
    # properties, all with smallulong descriptors. Anything else (or a short
    # message) falls through to the general walk below.
    try:
        if data[0] == 0 and data[1] == 0x53:
            code = data[2]
            pos = 0
            if code == 0x70:
                vcode = data[3]
                pos = 4 if vcode == 0x45 else (5 + data[4] if vcode == 0xC0 else -1)
                if pos > 0 and data[pos] == 0 and data[pos + 1] == 0x53:
                    code = data[pos + 2]
            if code == 0x73:
                return -1, -1, pos
            if code == 0x72 and pos >= 0:
                vcode = data[pos + 3]
                if vcode == 0xC1:
                    end = pos + 5 + data[pos + 4]
                elif vcode == 0xD1:
                    end = pos + 8 + u32(data, pos + 4)
                else:
                    end = -1
                if end > 0 and data[end] == 0 and data[end + 1] == 0x53 and data[end + 2] == 0x73:
                    return pos, end, end
    except IndexError:
        pass  # too short for the fast path; the general walk decides
    n = len(data)
    pos = 0
    ma_start = ma_end = -1
    last = HEADER - 1  # sections must appear in increasing code order, once each
    try:
        while pos < n:
            if data[pos] != 0:
                raise MessageFormatError(f"expected a described section at offset {pos}")
            if data[pos + 1] == 0x53:  # smallulong descriptor: the overwhelmingly common case
                code = data[pos + 2]
                vpos = pos + 3
            else:
                code, vpos = section_descriptor(data, pos + 1)
            if code > MESSAGE_ANNOTATIONS:
                if code > FOOTER:
                    raise MessageFormatError(f"unknown section 0x{code:x} at offset {pos}")
                return ma_start, ma_end, (pos if code == PROPERTIES else -1)
            if code <= last:
                raise MessageFormatError(f"unexpected section 0x{code:x} at offset {pos}")
            last = code
            # Inline the usual list8/map8/list0 encodings; anything else goes the generic way.
            vcode = data[vpos]
            if vcode == 0xC0 or vcode == 0xC1:
                end = vpos + 2 + data[vpos + 1]
                if end > n:
                    raise truncated(vpos)
            elif vcode == 0x45:
                end = vpos + 1
            else:
                end = skip_value(data, vpos)
            if code == MESSAGE_ANNOTATIONS:
                ma_start = pos
                ma_end = end
            pos = end
    except IndexError:
        raise truncated(pos) from None
    return ma_start, ma_end, -1


def read_to(data: bytes, props_start: int) -> str | None:
    """properties.to (3rd field) as str; None if properties are absent or ``to`` is absent/null.

    Accepts str8/str32/sym8/sym32. A ``to`` of any other type is treated as absent.
    """
    if props_start < 0:
        return None
    try:
        if data[props_start + 1] == 0x53 and data[props_start + 2] == PROPERTIES and data[props_start] == 0:
            vpos = props_start + 3  # the usual smallulong descriptor, checked inline
        else:
            vpos = section_value(data, props_start, PROPERTIES)
        code = data[vpos]
        if code == 0xC0:
            end = vpos + 2 + data[vpos + 1]
            count = data[vpos + 2]
            p = vpos + 3
        elif code == 0xD0:
            end = vpos + 5 + u32(data, vpos + 1)
            count = u32(data, vpos + 5)
            p = vpos + 9
        elif code == 0x45 or code == 0x40:  # list0 / null: no fields at all
            return None
        else:
            raise MessageFormatError(f"properties at offset {props_start} is not a list")
        if end > len(data):
            raise truncated(vpos)
        if count < 3:
            return None
        # message-id and user-id are usually null: skip those without a call
        p = p + 1 if data[p] == 0x40 else skip_value(data, p)
        p = p + 1 if data[p] == 0x40 else skip_value(data, p)
        if p >= end:
            raise truncated(p)
        return read_str(data, p, end)
    except IndexError:
        raise truncated(props_start) from None
