"""Codec of the router-control bodies against hand-written upstream-shaped maps."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from qdrouter.protocol.messages import (
    Hello,
    IncompatibleVersion,
    LinkStateRequest,
    LinkStateUpdate,
    MobileAddressRequest,
    MobileAddressUpdate,
    ProtocolError,
    RouterAdvertisement,
    decode,
)

UPSTREAM: Dict[str, Dict[str, Any]] = {
    "HELLO": {"id": "A", "pv": 1, "area": "0", "instance": 1700000000, "seen": ["B", "C"]},
    "RA": {"id": "A", "pv": 1, "area": "0", "instance": 7, "ls_seq": 3, "mobile_seq": 9},
    "LSU": {"id": "A", "pv": 1, "area": "0", "instance": 7, "ls_seq": 3,
            "ls": {"id": "A", "area": "0", "ls_seq": 3, "peers": {"B": 1, "C": 10}}},
    "LSR": {"id": "A", "pv": 1, "area": "0"},
    "MAU": {"id": "A", "pv": 1, "area": "0", "mobile_seq": 4, "hints": [3, 0], "add": ["M0q1", "M0t"],
            "del": ["M0old"]},
    "MAR": {"id": "A", "pv": 1, "area": "0", "have_seq": 2},
}


@pytest.mark.parametrize("opcode", sorted(UPSTREAM))
def test_round_trip(opcode: str) -> None:
    msg = decode(opcode, UPSTREAM[opcode])
    assert msg.OPCODE == opcode
    assert msg.to_dict() == UPSTREAM[opcode]


def test_absolute_mau_round_trip() -> None:
    body = {"id": "A", "pv": 1, "area": "0", "mobile_seq": 4, "exist": ["M0a", "M0b"], "hints": [3, 3]}
    msg = decode("MAU", body)
    assert isinstance(msg, MobileAddressUpdate) and msg.is_absolute
    assert msg.to_dict() == body


def test_fields_and_defaults_of_version_0_bodies() -> None:
    # Version-0 peers omit 'pv', 'instance' and 'area'.
    hello = Hello.from_dict({"id": "A", "seen": []})
    assert (hello.pv, hello.instance, hello.area) == (0, 0, "0")
    ra = RouterAdvertisement.from_dict({"id": "A", "ls_seq": 1, "mobile_seq": 0})
    assert ra.instance == 0
    lsu = LinkStateUpdate.from_dict(UPSTREAM["LSU"])
    assert lsu.ls.peers == {"B": 1, "C": 10}
    assert LinkStateRequest("X").to_dict() == {"id": "X", "pv": 1, "area": "0"}
    assert MobileAddressRequest("X", 5).to_dict() == {"id": "X", "pv": 1, "area": "0", "have_seq": 5}


@pytest.mark.parametrize("opcode, patch, field", [
    ("HELLO", {"id": 5}, "'id'"),
    ("HELLO", {"seen": "B"}, "'seen'"),
    ("HELLO", {"seen": ["B", 3]}, "'seen'"),
    ("RA", {"ls_seq": "3"}, "'ls_seq'"),
    ("RA", {"mobile_seq": True}, "'mobile_seq'"),
    ("RA", {"ls_seq": -1}, "'ls_seq'"),
    ("LSU", {"ls": []}, "'ls'"),
    ("LSU", {"ls": {"id": "A", "ls_seq": 3, "peers": {"B": "1"}}}, "'B'"),
    ("LSU", {"ls": {"id": "A", "ls_seq": 3, "peers": [1]}}, "'peers'"),
    ("MAU", {"add": "M0x"}, "'add'"),
    ("MAU", {"exist": ["M0x"]}, "'exist'"),
    ("MAU", {"hints": ["x", "y"]}, "'hints'"),
    ("MAR", {"have_seq": 1.5}, "'have_seq'"),
    ("LSR", {"area": 0}, "'area'"),
])
def test_malformed_fields_are_named(opcode: str, patch: Dict[str, Any], field: str) -> None:
    body = dict(UPSTREAM[opcode], **patch)
    with pytest.raises(ProtocolError, match=field):
        decode(opcode, body)


@pytest.mark.parametrize("opcode, key", [("HELLO", "seen"), ("RA", "mobile_seq"), ("LSU", "ls"),
                                         ("LSR", "id"), ("MAR", "have_seq"), ("MAU", "mobile_seq")])
def test_missing_mandatory_field(opcode: str, key: str) -> None:
    body = {k: v for k, v in UPSTREAM[opcode].items() if k != key}
    with pytest.raises(ProtocolError, match=f"'{key}' missing"):
        decode(opcode, body)


def test_differential_mau_needs_both_lists() -> None:
    body = {"id": "A", "mobile_seq": 1, "add": []}
    with pytest.raises(ProtocolError, match="'del'"):
        decode("MAU", body)


def test_bad_opcode_body_and_version() -> None:
    with pytest.raises(ProtocolError, match="opcode"):
        decode("XYZ", {})
    with pytest.raises(ProtocolError, match="map"):
        decode("RA", ["not", "a", "map"])
    with pytest.raises(IncompatibleVersion):
        decode("RA", dict(UPSTREAM["RA"], pv=2, ls_seq="anything"))
