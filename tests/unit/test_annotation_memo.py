"""The memo of message-annotation sections (amqp/data_path/inbound.py): many messages share a section
byte for byte, so what is read from it and what it is rewritten to are remembered. A memo
hit must give exactly what reading and rewriting that message afresh gives, whatever the
rest of the message (header, properties, body) holds."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from proton import Message, symbol

from qdrouter.amqp.codec.message_sections import find_sections
from qdrouter.amqp.codec.router_annotations import read_annotations, rewrite_annotations
from qdrouter.amqp.data_path import inbound
from qdrouter.core.links import DATA, CoreLink, InFlight

_counter = itertools.count()


def _encode(annotations: dict[Any, Any] | None, body: str, header: bool = False, to: str = "a/b") -> bytes:
    m = Message(body=body, address=to)
    if header:
        m.durable, m.priority = True, 7
    if annotations is not None:
        m.annotations = annotations
    return bytes(m.encode())


def _link(incoming: bool, kind: str = DATA, strip_in: bool = False) -> CoreLink:
    link = CoreLink(next(_counter), "l", incoming, None if incoming else "a/b", None, None,
                    strip_in=strip_in, strip_out=False)
    link.kind = kind
    return link


MESH = {symbol("x-opt-qd.ingress"): "0/R1", symbol("x-opt-qd.trace"): ["0/R1", "0/R2"],
        symbol("x-opt-qd.to"): "a/b"}


@pytest.fixture(autouse=True)
def empty_memo() -> None:
    inbound._read_memo.clear()
    inbound._rewrite_memo.clear()


def _fresh_stripped(raw: bytes) -> bytes:
    ma_start, ma_end, _ = find_sections(raw)
    return rewrite_annotations(raw, ma_start, ma_end, strip_qd=True, keep_to_override=False,
                               ingress=None, trace_append=None)


@pytest.mark.parametrize("header", [False, True])
def test_same_section_different_bodies(header: bool) -> None:
    """Messages with one section and different bodies: each keeps its own body, and the
    memo is actually used (one entry for all)."""
    in_link = _link(True)
    for i in range(20):
        raw = _encode(MESH, f"body {i}" * (i + 1), header=header)
        message = InFlight(raw, raw, in_link, None, True)
        inbound.inspect(in_link, message)
        assert message.ingress == "R1" and message.trace == ["R1", "R2"]
        assert inbound.stripped(message) == _fresh_stripped(raw)
        out = Message()
        out.decode(inbound.stripped(message))
        assert out.body == f"body {i}" * (i + 1) and not out.annotations
    assert len(inbound._read_memo) == 1 and len(inbound._rewrite_memo) == 1


@pytest.mark.parametrize("inspected", [True, False], ids=["inspected", "fast-path"])
def test_annotated_for_the_next_router_matches_a_fresh_rewrite(inspected: bool) -> None:
    # Messages the fast path forwarded were never inspected: the section (or where a
    # missing one goes) is found when annotating.
    in_link, out_link = _link(True), _link(False)
    for i, section in enumerate([MESH, None, {symbol("app"): "kept", **MESH}, MESH, None]):
        raw = _encode(section, f"m{i}", header=bool(i % 2))
        message = InFlight(raw, raw, in_link, None, True)
        message.key = "a/b"
        if inspected:
            inbound.inspect(in_link, message)
        ma_start, ma_end, _ = find_sections(raw)
        fresh = rewrite_annotations(raw, ma_start, ma_end, strip_qd=False, keep_to_override=True,
                                    ingress="0/R3", trace_append="0/R3", to_override="a/b",
                                    phase=None, trace_create=True)
        for _ in range(2):  # the second time from the memo
            assert inbound.annotated(message, out_link, "0/R3") == fresh
        sent = Message()
        sent.decode(fresh)
        assert sent.body == f"m{i}"
        assert sent.annotations[symbol("x-opt-qd.trace")][-1] == "0/R3"


@pytest.mark.parametrize("inspected", [True, False], ids=["inspected", "fast-path"])
def test_annotations_go_after_the_header_of_a_message_without_properties(inspected: bool) -> None:
    in_link, out_link = _link(True), _link(False)
    header = b"\x00\x53\x70\xc0\x02\x01\x41"  # header: durable
    body = b"\x00\x53\x77\xa1\x05hello"  # amqp-value "hello"
    message = InFlight(header + body, header + body, in_link, None, True)
    message.key = "a/b"
    if inspected:
        inbound.inspect(in_link, message)
    sent = Message()
    sent.decode(inbound.annotated(message, out_link, "0/R3"))
    assert sent.durable and sent.body == "hello"
    assert sent.annotations[symbol("x-opt-qd.to")] == "a/b"
    assert sent.annotations[symbol("x-opt-qd.trace")] == ["0/R3"]


def test_shared_trace_is_not_changed_by_routing() -> None:
    in_link = _link(True)
    raw = _encode(MESH, "x")
    first, second = InFlight(raw, raw, in_link, None, True), InFlight(raw, raw, in_link, None, True)
    inbound.inspect(in_link, first)
    inbound.inspect(in_link, second)
    assert first.trace == second.trace == ["R1", "R2"]
    assert read_annotations(raw, *find_sections(raw)[:2]).trace == ["0/R1", "0/R2"]


def test_large_sections_are_not_remembered_and_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    in_link = _link(True)
    big = {**MESH, symbol("app.blob"): "z" * 1000}
    raw = _encode(big, "x")
    message = InFlight(raw, raw, in_link, None, True)
    inbound.inspect(in_link, message)
    assert inbound.stripped(message) == _fresh_stripped(raw)
    assert not inbound._read_memo and not inbound._rewrite_memo
    monkeypatch.setattr(inbound, "_MEMO_ENTRIES", 8)
    for i in range(30):
        raw = _encode({**MESH, symbol("app.n"): i}, "x")
        message = InFlight(raw, raw, in_link, None, True)
        inbound.inspect(in_link, message)
        assert inbound.stripped(message) == _fresh_stripped(raw)
    assert len(inbound._read_memo) <= 8 and len(inbound._rewrite_memo) <= 8
