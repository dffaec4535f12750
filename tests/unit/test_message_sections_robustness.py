"""message_sections must reject malformed input with MessageFormatError only (never IndexError etc.)."""

from __future__ import annotations

import random

import pytest
from proton import Message, int32, symbol

from qdrouter.amqp.codec.amqp_types import skip_value
from qdrouter.amqp.codec.message_sections import MessageFormatError, find_sections, read_to
from qdrouter.amqp.codec.router_annotations import read_annotations, rewrite_annotations

SAMPLES = [
    bytes(m.encode())
    for m in [
        Message(
            body="b" * 300,
            address="a" * 300,
            durable=True,
            instructions={symbol("d"): [1, 2]},
            annotations={
                symbol("x-opt-qd.trace"): ["0/A"],
                symbol("x-opt-qd.ingress"): "0/A",
                symbol("x-opt-qd.phase"): int32(1),
                symbol("k"): {"n": [None, 1.5]},
            },
        ),
        Message(body=b"xyz", address="q", annotations={symbol("x-opt-qd.to"): "t"}),
        Message(body="x"),
    ]
]


def exercise(data: bytes) -> None:
    """Run the whole API; only MessageFormatError may escape."""
    try:
        ma_start, ma_end, props = find_sections(data)
        read_to(data, props)
        read_annotations(data, ma_start, ma_end)
        rewrite_annotations(
            data,
            ma_start,
            ma_end,
            strip_qd=True,
            keep_to_override=True,
            ingress="0/R",
            trace_append="0/R",
            to_override="o",
            phase=2,
        )
        rewrite_annotations(
            data, ma_start, ma_end, strip_qd=False, keep_to_override=False, ingress="0/R", trace_append="0/R"
        )
    except MessageFormatError:
        pass


@pytest.mark.parametrize("sample", SAMPLES)
def test_every_truncation(sample: bytes) -> None:
    for n in range(len(sample)):
        exercise(sample[:n])


def test_truncation_inside_leading_sections_raises() -> None:
    data = SAMPLES[0]
    _, _, props = find_sections(data)
    boundaries = set()
    pos = 0
    while pos < props:  # collect the section boundaries before properties
        boundaries.add(pos)
        pos = skip_value(data, pos)
    for n in range(1, props):
        if n in boundaries:
            continue
        with pytest.raises(MessageFormatError):
            find_sections(data[:n])
    for n in range(props + 1, props + 40):  # inside the properties section
        with pytest.raises(MessageFormatError):
            read_to(data[:n], props)


@pytest.mark.parametrize("seed", range(5))
def test_random_mutations(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(3000):
        data = bytearray(rng.choice(SAMPLES))
        for _ in range(rng.randint(1, 4)):
            interesting = (0, 0x40, 0x53, 0x72, 0xA1, 0xC1, 0xD1, 0xFF, rng.randrange(256))
            data[rng.randrange(len(data))] = rng.choice(interesting)
        exercise(bytes(data))


@pytest.mark.parametrize("seed", range(3))
def test_random_garbage(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(3000):
        exercise(bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))))
        exercise(b"\x00\x53\x72" + bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))))


@pytest.mark.parametrize(
    "data",
    [
        b"\x00" * 10000,  # endless descriptors: no recursion
        b"\x01\x53\x70\x45",  # not a described section
        b"\x00\x53\x10\x45",  # unknown section code
        b"\x00\x53\x79\x45",
        b"\x00\x53\x72\xc1\x01\x00\x00\x53\x72\xc1\x01\x00",  # duplicate MA
        b"\x00\x53\x72\xc1\x01\x00\x00\x53\x70\x45",  # header after MA
        b"\x00\x53\x70\xd0\xff\xff\xff\xff",  # size beyond data
        b"\x00\x53\x70\x30",  # invalid type code
        b"\x00\x80\x00\x00",  # truncated ulong descriptor
        b"\x00\xa3\x05amqp",  # truncated symbolic descriptor
        b"\x00\xa3\x04amqp\x45",  # unknown symbolic descriptor
    ],
)
def test_malformed_find_sections(data: bytes) -> None:
    with pytest.raises(MessageFormatError):
        find_sections(data)


@pytest.mark.parametrize(
    "ma",
    [
        b"\x00\x53\x72\x45",  # not a map
        b"\x00\x53\x72\xc1\x03\x01\x40\x40",  # odd count
        b"\x00\x53\x72\xc1\x04\x04\x40\x40",  # count beyond size
        b"\x00\x53\x72\xc1\x04\x02\x40\x40\x40",  # trailing bytes inside the map
        b"\x00\x53\x72\xc1\x0c\x02\xa3\x0ex-opt-qd.to\x40",  # key longer than the map
        b"\x00\x53\x72\xc1\x10\x02\xa3\x0bx-opt-qd.to\xa1\x02\xff\xfe",  # invalid UTF-8
    ],
)
def test_malformed_annotations(ma: bytes) -> None:
    data = ma + b"\x00\x53\x77\x40"
    with pytest.raises(MessageFormatError):
        ma_start, ma_end, _ = find_sections(data)
        read_annotations(data, ma_start, ma_end)
    with pytest.raises(MessageFormatError):
        rewrite_annotations(
            data, 0, len(ma), strip_qd=True, keep_to_override=False, ingress="x", trace_append="y"
        )


def test_wrong_offsets_rejected() -> None:
    data = SAMPLES[1]
    ma_start, ma_end, props = find_sections(data)
    with pytest.raises(MessageFormatError):
        read_annotations(data, ma_start, ma_end - 1)
    with pytest.raises(MessageFormatError):
        read_annotations(data, props, ma_end)
    with pytest.raises(MessageFormatError):
        read_to(data, ma_start)
    with pytest.raises(MessageFormatError):
        skip_value(data, -1)
