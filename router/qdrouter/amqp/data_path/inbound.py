"""Reading router annotations off arriving messages and writing them on departing ones
(Qpid Dispatch 0.7 book, 3.3.1). Used off the fast path: only messages that carry, or need, x-opt-qd keys.

Messages between the same routers to the same address carry the same message-annotations
section, byte for byte (ingress, trace, to), so what is read from a section, and what a
section becomes when rewritten, is remembered by its bytes: every message crossing a mesh
is parsed here at every hop, and parsing it in Python cost more than forwarding it."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...core.address_table import phased, split_phase
from ...core.address_view import hash_view
from ...core.links import DATA, CoreLink, InFlight
from ..codec.amqp_types import section_insert_pos
from ..codec.message_sections import find_sections, read_to
from ..codec.router_annotations import Annotations, read_annotations, rewrite_annotations

# Sections larger than this (user annotations, typically) are not remembered, and the
# memo is emptied when it reaches _MEMO_ENTRIES: memory stays within ~1 MiB per memo.
_MEMO_SECTION_MAX = 512
_MEMO_ENTRIES = 2048
# section bytes -> (annotations, ingress router id, trace as router ids)
_read_memo: Dict[bytes, Tuple[Annotations, str | None, List[str] | None]] = {}
# (section bytes, rewrite parameters) -> the rewritten section, or None when unchanged
_rewrite_memo: Dict[Tuple[Any, ...], bytes | None] = {}


def _read(raw: bytes, ma_start: int, ma_end: int) -> Tuple[Annotations, str | None, List[str] | None]:
    section = raw[ma_start:ma_end]
    found = _read_memo.get(section)
    if found is None:
        annotations = read_annotations(raw, ma_start, ma_end)
        trace = annotations.trace
        trace_ids = None if trace is None else [node[2:] if node.startswith("0/") else node for node in trace]
        found = (annotations, _router_id(annotations.ingress), trace_ids)
        if len(section) <= _MEMO_SECTION_MAX:
            if len(_read_memo) >= _MEMO_ENTRIES:
                _read_memo.clear()
            _read_memo[section] = found
    return found


def _rewrite(raw: bytes, ma_start: int, ma_end: int, params: Tuple[Any, ...]) -> bytes:
    """rewrite_annotations(raw, ...) with params (strip_qd, keep_to_override, ingress,
    trace_append, to_override, phase, trace_create), through the memo."""
    if ma_start < 0:
        # A missing section goes where the adaptor saw properties begin, else after the
        # header / delivery-annotations, found by walking them.
        start = end = ma_end if ma_end >= 0 else section_insert_pos(raw)
    else:
        start, end = ma_start, ma_end
    section = raw[start:end]
    key = (section, params)
    try:
        new_section = _rewrite_memo[key]
    except KeyError:
        strip_qd, keep_to, ingress, trace_append, to_override, phase, trace_create = params
        result = rewrite_annotations(raw, ma_start, ma_end, strip_qd=strip_qd, keep_to_override=keep_to,
                                     ingress=ingress, trace_append=trace_append,
                                     to_override=to_override, phase=phase, trace_create=trace_create)
        # Head and tail are untouched, so the new section is what lies between them.
        new_section = None if result is raw else result[start:len(result) - (len(raw) - end)]
        if len(section) <= _MEMO_SECTION_MAX:
            if len(_rewrite_memo) >= _MEMO_ENTRIES:
                _rewrite_memo.clear()
            _rewrite_memo[key] = new_section
        return result
    if new_section is None:
        return raw
    return b"".join((raw[:start], new_section, raw[end:]))


def inspect(link: CoreLink, message: InFlight) -> str | None:
    """Record the message's router annotations, prepare the payload for consumers that
    strip them, and return the address to route an anonymous link's message by."""
    raw = message.raw
    ma_start, ma_end, props_start = find_sections(raw)
    message.ma_span = (ma_start, ma_end) if ma_start >= 0 else (-1, props_start)
    to_override = None
    phase = None
    if ma_start >= 0:
        annotations, ingress_id, trace_ids = _read(raw, ma_start, ma_end)
        if not link.strip_in:
            # Only other routers' (or trusted) annotations count, for mesh decisions and for
            # routing by x-opt-qd.to, as in qdrouterd: a client on a listener that strips
            # annotations cannot redirect its messages with one. They name routers as
            # "<area>/<id>"; routing works with ids. (trace_ids is shared by every message
            # with this section: read, never changed.)
            to_override = annotations.to_override
            message.ingress = ingress_id
            if trace_ids is not None:
                message.trace = trace_ids
            phase = annotations.phase
        if (annotations.to_override is not None or annotations.ingress is not None
                or annotations.trace is not None or annotations.phase is not None
                or annotations.has_other_qd_keys):
            # Made only if a consumer that strips annotations takes it (see stripped()):
            # a message passing through to another router never needs it.
            message.payload = None
    if not link.anonymous:
        return link.address_key
    # Keyed in qdrouterd's view ("/x" and "amqp:/x" are "x"), as the attaches' addresses are.
    address = to_override if to_override is not None else read_to(raw, props_start)
    if address is not None:
        address = hash_view(address)
    if phase and link.kind == DATA and address is not None:
        # Another router already chose the waypoint phase (x-opt-qd.phase): keep it.
        return phased(address, phase)
    return address


def stripped(message: InFlight) -> bytes:
    """The message without router annotations (made once, on first need)."""
    payload = message.payload
    if payload is None:
        raw = message.raw
        ma_start, ma_end = _ma_span(message)
        payload = message.payload = _rewrite(raw, ma_start, ma_end,
                                             (True, False, None, None, None, None, False))
    return payload


def annotated(message: InFlight, out_link: CoreLink, node: str, edge_router: bool = False) -> bytes:
    """The message for a link that keeps router annotations. Toward another router it
    carries ingress, trace (started here if absent) and the address in x-opt-qd.to; toward a
    client that asked to keep annotations, ingress and an existing trace. Between an edge
    router and its interior the address goes in x-opt-qd.to too (the anonymous up- and
    downlinks route by it); an edge router adds no ingress or trace (as qdrouterd's)."""
    raw = message.raw
    ma_start, ma_end = _ma_span(message)
    to_mesh = out_link.kind == DATA
    with_to = to_mesh or out_link.via_edge
    address, phase = split_phase(message.key) if with_to and message.key else (message.key, 0)
    if edge_router and out_link.via_edge:
        return _rewrite(raw, ma_start, ma_end, (True, False, None, None, address, phase or None, False))
    return _rewrite(raw, ma_start, ma_end, (
        message.in_link.strip_in,  # strip_qd
        not message.in_link.strip_in,  # keep_to_override: a client's is stripped with the rest
        node,  # ingress
        node,  # trace_append
        address if with_to else None,  # to_override
        phase if with_to and phase else None,
        to_mesh,  # trace_create
    ))


def _ma_span(message: InFlight) -> Tuple[int, int]:
    span = message.ma_span
    if span is None:
        ma_start, ma_end, props_start = find_sections(message.raw)
        span = message.ma_span = (ma_start, ma_end) if ma_start >= 0 else (-1, props_start)
    return span


def _router_id(node: str | None) -> str | None:
    if node is not None and node.startswith("0/"):
        return node[2:]
    return node
