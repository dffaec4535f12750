"""message_sections against messages encoded by proton's own Message class."""

from __future__ import annotations

import itertools
import uuid
from typing import Any, cast

import pytest
from proton import UNDESCRIBED, Array, Data, Message, char, int32, symbol, ubyte, ulong

from qdrouter.amqp.codec.amqp_types import encode_string, encode_string_list, encode_symbol, skip_value
from qdrouter.amqp.codec.message_sections import MessageFormatError, find_sections, read_to
from qdrouter.amqp.codec.router_annotations import Annotations, read_annotations, rewrite_annotations

LONG = "L" * 300  # forces str32 / map32 / list32 encodings
OTHER_MA: dict[Any, Any] = {
    symbol("app.key"): "v",
    symbol("n"): 7,
    symbol("i32"): int32(-5),
    symbol("c"): char("x"),
    symbol("u"): uuid.UUID(int=12345),
    symbol("lst"): [1, "two", 3.0, None, True],
    symbol("map"): {"a": {"b": [ubyte(1)]}},
    ulong(42): "ulong key",
    symbol("bin"): b"\x00\x53\x73",  # looks like a section descriptor; must be skipped as data
}

HEADERS: list[dict[str, Any]] = [{}, {"durable": True, "priority": 7, "ttl": 1.5}]
INSTRUCTIONS: list[Any] = [None, {symbol("da"): 1, symbol("big"): LONG}]
ANNOTATIONS: list[Any] = [
    None,
    {symbol("only"): "other"},
    dict(OTHER_MA),
    {
        **OTHER_MA,
        symbol("x-opt-qd.to"): "over",
        symbol("x-opt-qd.ingress"): "0/RA",
        symbol("x-opt-qd.trace"): ["0/RA", "0/RB"],
        symbol("x-opt-qd.phase"): int32(1),
        symbol("x-opt-qd.custom"): 1,
    },
    {symbol("x-opt-qd.ingress"): LONG, symbol("big"): LONG},
]
ADDRESSES = [None, "q1", "amqp:/_topo/0/Router.A/$management", LONG]
BODIES: list[tuple[Any, bool]] = [
    ("hello", False),
    (LONG * 8, False),  # > 2 KiB: the zero-copy join path
    (b"\x00\x53\x72" * 100, True),  # data section containing fake MA descriptors
    ([1, 2, 3], True),  # amqp-sequence
    ({"k": "v"}, False),
    (None, False),
]


def make(
    header: dict[str, Any],
    instructions: Any,
    annotations: Any,
    address: Any,
    body: tuple[Any, bool],
    app_props: Any = None,
) -> Message:
    m = Message(body=body[0], inferred=body[1], address=address, **header)
    m.instructions = instructions
    m.annotations = annotations
    m.properties = app_props
    if address is not None:
        m.subject = "subj"
        m.correlation_id = 99
    return m


def enc(msg: Message) -> bytes:
    return bytes(msg.encode())  # proton returns a bytearray; the router works on bytes


def decode(data: bytes) -> Message:
    m = Message()
    m.decode(data)
    return m


def snapshot(m: Message) -> dict[str, Any]:
    """Everything except annotations, for 'unchanged' comparisons."""
    return {
        k: getattr(m, k)
        for k in (
            "durable",
            "priority",
            "ttl",
            "first_acquirer",
            "delivery_count",
            "instructions",
            "id",
            "user_id",
            "address",
            "subject",
            "reply_to",
            "correlation_id",
            "content_type",
            "content_encoding",
            "expiry_time",
            "creation_time",
            "group_id",
            "group_sequence",
            "reply_to_group_id",
            "properties",
            "body",
            "inferred",
        )
    }


def all_messages() -> list[Message]:
    combos = itertools.product(HEADERS, INSTRUCTIONS, ANNOTATIONS, ADDRESSES[:2], BODIES[:2])
    out = [make(*c) for c in combos]
    props = {"ap": 1, "s": LONG}
    out += [make(HEADERS[1], None, ANNOTATIONS[3], a, b, props) for a in ADDRESSES for b in BODIES]
    return out


MESSAGES = all_messages()


def expected_qd(annotations: Any) -> Annotations:
    a = dict(annotations or {})
    trace = a.get("x-opt-qd.trace")
    return Annotations(
        a.get("x-opt-qd.to"),
        a.get("x-opt-qd.ingress"),
        list(trace) if trace is not None else None,
        a.get("x-opt-qd.phase"),
        any(
            isinstance(k, str)
            and k.startswith("x-opt-qd.")
            and k not in ("x-opt-qd.to", "x-opt-qd.ingress", "x-opt-qd.trace", "x-opt-qd.phase")
            for k in a
        ),
    )


@pytest.mark.parametrize("msg", MESSAGES)
def test_offsets_to_and_annotations(msg: Message) -> None:
    data = enc(msg)
    ma_start, ma_end, props = find_sections(data)
    assert data[props : props + 3] == b"\x00\x53\x73"  # proton always writes properties
    assert read_to(data, props) == msg.address
    if msg.annotations is None:
        assert (ma_start, ma_end) == (-1, -1)
    else:
        assert data[ma_start : ma_start + 3] == b"\x00\x53\x72"
        assert ma_end == props
        # Cutting out exactly [ma_start:ma_end] leaves a valid message without annotations.
        cut = decode(data[:ma_start] + data[ma_end:])
        assert cut.annotations is None
        assert snapshot(cut) == snapshot(msg)
    assert read_annotations(data, ma_start, ma_end) == expected_qd(msg.annotations)


def test_no_header_no_properties() -> None:
    data = b"\x00\x53\x77\xa1\x02hi"
    assert find_sections(data) == (-1, -1, -1)
    assert read_to(data, -1) is None
    assert find_sections(b"") == (-1, -1, -1)
    hdr_only = b"\x00\x53\x70\x45"
    assert find_sections(hdr_only) == (-1, -1, -1)
    ma = b"\x00\x53\x72\xc1\x01\x00"
    assert find_sections(ma + data) == (0, 6, -1)


def test_properties_to_variants() -> None:
    def props(fields: bytes, count: int) -> bytes:
        return b"\x00\x53\x73\xc0" + bytes((len(fields) + 1, count)) + fields

    assert read_to(props(b"\x40\x40" + encode_symbol("sym"), 3), 0) == "sym"
    assert read_to(props(b"\x40\x40" + encode_string("é"), 3), 0) == "é"
    assert read_to(props(b"\x40\x40\x40", 3), 0) is None
    assert read_to(props(b"\x40\x40", 2), 0) is None
    assert read_to(props(b"\x40\x40\xb3\x00\x00\x00\x02ab", 3), 0) == "ab"
    assert read_to(props(b"\x40\x40\x71\x00\x00\x00\x01", 3), 0) is None  # wrong type: absent
    assert read_to(b"\x00\x53\x73\x45", 0) is None
    # message-id as a described value and user-id as binary are skipped generically
    assert read_to(props(b"\x00\x53\x01\x52\x05\xa0\x01u" + encode_string("x"), 3), 0) == "x"
    with pytest.raises(MessageFormatError):
        read_to(b"\x00\x53\x70\x45", 0)  # not a properties section
    with pytest.raises(MessageFormatError):
        read_to(props(b"\x40\x40\xa1\x05ab", 3), 0)


@pytest.mark.parametrize("form", ["ulong", "sym8", "sym32"])
def test_alternative_descriptors(form: str) -> None:
    msg = make(HEADERS[1], INSTRUCTIONS[1], ANNOTATIONS[3], "addr", BODIES[0])
    small = enc(msg)
    alt = {
        "ulong": lambda c, n: b"\x00\x80" + c.to_bytes(8, "big"),
        "sym8": lambda c, n: b"\x00\xa3" + bytes((len(n),)) + n,
        "sym32": lambda c, n: b"\x00\xb3" + len(n).to_bytes(4, "big") + n,
    }[form]
    names = {
        0x70: b"amqp:header:list",
        0x71: b"amqp:delivery-annotations:map",
        0x72: b"amqp:message-annotations:map",
        0x73: b"amqp:properties:list",
    }
    data, pos = b"", 0
    while pos < len(small):  # swap the descriptor of every section, value bytes untouched
        code, end = small[pos + 2], skip_value(small, pos)
        data += (alt(code, names[code]) if code in names else small[pos : pos + 3]) + small[pos + 3 : end]
        pos = end
    ma_start, ma_end, props = find_sections(data)
    assert data[ma_start:ma_end].startswith(alt(0x72, names[0x72]))
    assert data[props:].startswith(alt(0x73, names[0x73]))
    assert read_to(data, props) == "addr"
    assert read_annotations(data, ma_start, ma_end) == expected_qd(msg.annotations)
    out = rewrite_annotations(
        data, ma_start, ma_end, strip_qd=True, keep_to_override=False, ingress="0/me", trace_append=None
    )
    # The original descriptor is kept; normalise the descriptors so proton can check the result.
    for code, name in names.items():
        out = out.replace(alt(code, name), b"\x00\x53" + bytes((code,)), 1)  # first hit is the descriptor
    got = decode(out)
    assert got.annotations == {**strip(msg.annotations), "x-opt-qd.ingress": "0/me"}
    assert snapshot(got) == snapshot(msg)


def strip(annotations: Any, keep_to: bool = False) -> dict[Any, Any]:
    def keep(k: Any) -> bool:
        return not (isinstance(k, str) and k.startswith("x-opt-qd.")) or (keep_to and k == "x-opt-qd.to")

    return {k: v for k, v in (annotations or {}).items() if keep(k)}


def rewrite(data: bytes, **kw: Any) -> bytes:
    ma_start, ma_end, _ = find_sections(data)
    args: dict[str, Any] = {"strip_qd": False, "keep_to_override": False}
    args.update({"ingress": None, "trace_append": None, **kw})
    return rewrite_annotations(data, ma_start, ma_end, **args)


@pytest.mark.parametrize("msg", MESSAGES)
@pytest.mark.parametrize("keep_to", [False, True])
def test_rewrite_ingress_router(msg: Message, keep_to: bool) -> None:
    """What an ingress router does: strip client qd keys, stamp ingress, append trace (absent -> no-op)."""
    data = enc(msg)
    out = rewrite(data, strip_qd=True, keep_to_override=keep_to, ingress="0/R1", trace_append="0/R1")
    got = decode(out)
    assert got.annotations == {**strip(msg.annotations, keep_to), "x-opt-qd.ingress": "0/R1"}
    assert snapshot(got) == snapshot(msg)
    # every kept entry appears byte for byte
    for k, v in strip(msg.annotations, keep_to).items():
        d = Data()
        d.put_dict({k: v})
        assert d.encode()[9:] in out or d.encode()[3:] in out


@pytest.mark.parametrize("msg", MESSAGES)
def test_rewrite_transit_router(msg: Message) -> None:
    """What a transit router does: keep everything, add ingress if missing, append to trace if present."""
    data = enc(msg)
    out = rewrite(data, ingress="0/R2", trace_append="0/R2")
    got = decode(out)
    expected = dict(msg.annotations or {})
    expected.setdefault(symbol("x-opt-qd.ingress"), "0/R2")
    if "x-opt-qd.trace" in expected:
        expected[symbol("x-opt-qd.trace")] = [*expected["x-opt-qd.trace"], "0/R2"]
    assert got.annotations == expected
    assert list(got.annotations) == list(expected)  # order kept; additions last
    assert snapshot(got) == snapshot(msg)


def test_no_change_returns_same_object() -> None:
    for msg in MESSAGES:
        data = enc(msg)
        assert rewrite(data) is data
        assert rewrite(data, trace_append="0/X") is data or "x-opt-qd.trace" in (msg.annotations or {})
        if msg.annotations is not None and "x-opt-qd.ingress" in msg.annotations:
            assert rewrite(data, ingress="0/X") is data


def test_strip_to_empty_removes_section() -> None:
    msg = make(
        HEADERS[1], INSTRUCTIONS[1], {symbol("x-opt-qd.to"): "a", symbol("x-opt-qd.phase"): 2}, "q", BODIES[2]
    )
    data = enc(msg)
    ma_start, ma_end, _ = find_sections(data)
    out = rewrite(data, strip_qd=True)
    assert out == data[:ma_start] + data[ma_end:]
    assert find_sections(out)[:2] == (-1, -1)
    assert decode(out).annotations is None
    kept = rewrite(data, strip_qd=True, keep_to_override=True)
    assert decode(kept).annotations == {"x-opt-qd.to": "a"}


@pytest.mark.parametrize("header", [None, *HEADERS])
@pytest.mark.parametrize("instructions", INSTRUCTIONS)
def test_insert_new_section(header: Any, instructions: Any) -> None:
    msg = make(header or {}, instructions, None, "q", BODIES[1], {"ap": 1})
    data = enc(msg)
    if header is None:
        assert data.startswith(b"\x00\x53\x70\x45")
        data = data[4:]  # proton always writes a header; drop the empty one
    out = rewrite(data, ingress="0/R1", to_override="new-to", phase=3)
    ma_start, ma_end, props = find_sections(out)
    assert ma_start >= 0 and ma_end == props
    got = decode(out)
    assert got.annotations == {"x-opt-qd.to": "new-to", "x-opt-qd.ingress": "0/R1", "x-opt-qd.phase": 3}
    assert snapshot(got) == snapshot(msg)
    assert out[:ma_start] + out[ma_end:] == data


def test_to_override_and_phase_replace_in_place() -> None:
    msg = make({}, None, ANNOTATIONS[3], "q", BODIES[0])
    out = rewrite(enc(msg), to_override="T2", phase=-70000)
    got, sent = decode(out), dict(msg.annotations or {})
    assert got.annotations == {**sent, "x-opt-qd.to": "T2", "x-opt-qd.phase": -70000}
    assert list(got.annotations or {}) == list(sent)
    assert read_annotations(out, *find_sections(out)[:2]) == expected_qd(got.annotations)


@pytest.mark.parametrize("n", [0, 1, 40])
def test_trace_list_growth_and_array_trace(n: int) -> None:
    trace = [f"0/Router.{i}" for i in range(n)]  # 40 ids exceed list8
    for value in (trace, Array(cast(Any, UNDESCRIBED), Data.STRING, *trace) if trace else trace):
        msg = make({}, None, {symbol("k"): 1, symbol("x-opt-qd.trace"): value}, "q", BODIES[0])
        out = rewrite(enc(msg), trace_append="0/me")
        ann = read_annotations(out, *find_sections(out)[:2])
        assert ann.trace == [*trace, "0/me"]
        got: dict[Any, Any] = dict(decode(out).annotations or {})
        assert list(got["x-opt-qd.trace"]) == [*trace, "0/me"] and got["k"] == 1


def test_large_map_switches_to_map32() -> None:
    out = rewrite(enc(make({}, None, {symbol("a"): 1}, "q", BODIES[0])), ingress=LONG)
    assert out[find_sections(out)[0] + 3] == 0xD1
    assert decode(out).annotations == {"a": 1, "x-opt-qd.ingress": LONG}
    small = rewrite(enc(make({}, None, None, "q", BODIES[0])), ingress="0/R")
    assert small[find_sections(small)[0] + 3] == 0xC1


def test_string_keys_and_wrong_types_tolerated() -> None:
    entries = [
        encode_string("x-opt-qd.to") + encode_string("s"),  # string (not symbol) key
        encode_symbol("x-opt-qd.ingress") + b"\x55\x07",  # ingress of a wrong type
        encode_symbol("x-opt-qd.trace") + b"\x40",  # null trace
        encode_symbol("x-opt-qd.phase") + b"\x43",
    ]  # uint0
    payload = b"".join(entries)
    ma = b"\x00\x53\x72\xc1" + bytes((len(payload) + 1, 8)) + payload
    data = ma + b"\x00\x53\x77\x40"
    assert find_sections(data) == (0, len(ma), -1)
    assert read_annotations(data, 0, len(ma)) == Annotations("s", None, None, 0, False)
    assert rewrite(data, ingress="x", trace_append="y") is data  # present ingress kept; null trace untouched


def test_encoders_and_skip_value() -> None:
    assert encode_symbol("ab") == b"\xa3\x02ab"
    assert encode_string(LONG)[:5] == b"\xb1\x00\x00\x01\x2c"
    assert encode_string_list([]) == b"\x45"
    assert encode_string_list(["a"]) == b"\xc0\x04\x01\xa1\x01a"
    with pytest.raises(ValueError):
        encode_symbol("é")
    d = Data()
    d.put_list()
    d.enter()
    d.put_described()
    d.enter()
    d.put_symbol("desc")
    d.put_uuid(uuid.UUID(int=1))
    d.exit()
    d.put_decimal128(b"\x01" * 16)
    d.exit()
    raw = d.encode()
    assert skip_value(raw + b"tail", 0) == len(raw)


def test_bytearray_input() -> None:
    msg = make(HEADERS[1], INSTRUCTIONS[1], ANNOTATIONS[3], "q", BODIES[1])
    data = msg.encode()  # bytearray, as proton returns it
    assert isinstance(data, bytearray)
    ma_start, ma_end, props = find_sections(data)
    assert read_to(data, props) == "q"
    assert read_annotations(data, ma_start, ma_end) == expected_qd(msg.annotations)
    out = rewrite_annotations(
        data, ma_start, ma_end, strip_qd=True, keep_to_override=False, ingress="0/R", trace_append=None
    )
    assert decode(out).annotations == {**strip(msg.annotations), "x-opt-qd.ingress": "0/R"}
