"""Reading router annotations off arriving messages and writing them on departing ones
(book 3.3.1). Used off the fast path: only messages that carry, or need, x-opt-qd keys."""

from __future__ import annotations

from ..core.address_table import phased, split_phase
from ..core.links import DATA, CoreLink, InFlight
from .message_sections import find_sections, read_annotations, read_to, rewrite_annotations
from .proton_ffi import normalize_address


def inspect(link: CoreLink, message: InFlight) -> str | None:
    """Record the message's router annotations, prepare the payload for consumers that
    strip them, and return the address to route an anonymous link's message by."""
    raw = message.raw
    ma_start, ma_end, props_start = find_sections(raw)
    to_override = None
    phase = None
    if ma_start >= 0:
        annotations = read_annotations(raw, ma_start, ma_end)
        to_override = annotations.to_override
        if not link.strip_in:
            # Only other routers' (or trusted) annotations count for mesh decisions. They
            # name routers as "<area>/<id>"; routing works with ids.
            message.ingress = _router_id(annotations.ingress)
            if annotations.trace is not None:
                message.trace = [_router_id(node) for node in annotations.trace]
            phase = annotations.phase
        if (to_override is not None or annotations.ingress is not None or annotations.trace is not None
                or annotations.phase is not None or annotations.has_other_qd_keys):
            # Made only if a consumer that strips annotations takes it (see stripped()):
            # a message passing through to another router never needs it.
            message.payload = None
    if not link.anonymous:
        return link.address_key
    address = normalize_address(to_override) if to_override is not None else normalize_address(
        read_to(raw, props_start))
    if phase and link.kind == DATA and address is not None:
        # Another router already chose the waypoint phase (x-opt-qd.phase): keep it.
        return phased(address, phase)
    return address


def stripped(message: InFlight) -> bytes:
    """The message without router annotations (made once, on first need)."""
    payload = message.payload
    if payload is None:
        raw = message.raw
        ma_start, ma_end, _ = find_sections(raw)
        payload = message.payload = rewrite_annotations(raw, ma_start, ma_end, strip_qd=True,
                                                        keep_to_override=False, ingress=None,
                                                        trace_append=None)
    return payload


def annotated(message: InFlight, out_link: CoreLink, node: str) -> bytes:
    """The message for a link that keeps router annotations. Toward another router it
    carries ingress, trace (started here if absent) and the address in x-opt-qd.to; toward a
    client that asked to keep annotations, ingress and an existing trace."""
    raw = message.raw
    ma_start, ma_end, _ = find_sections(raw)
    to_mesh = out_link.kind == DATA
    address, phase = split_phase(message.key) if to_mesh and message.key else (message.key, 0)
    return rewrite_annotations(
        raw, ma_start, ma_end,
        strip_qd=message.in_link.strip_in,
        keep_to_override=True,
        ingress=node,
        trace_append=node,
        to_override=address if to_mesh else None,
        phase=phase if to_mesh and phase else None,
        trace_create=to_mesh,
    )


def _router_id(node: str | None) -> str | None:
    if node is not None and node.startswith("0/"):
        return node[2:]
    return node
