"""Control messages as bytes: the AMQP types upstream gives each body (the mesh test
tests/mesh/test_upstream_wire.py checks the ones a router sends unprompted; these are the
answers it sends only when asked)."""

from __future__ import annotations

from proton import Message, int32, symbol

from qdrouter.amqp.codec.control_wire import encode_control
from qdrouter.protocol.messages import MobileAddressRequest, MobileAddressUpdate


def _decoded(address: str, opcode: str, body: dict) -> Message:
    message = Message()
    message.decode(encode_control(address, opcode, body, {"x-opt-qd.ingress": "0/R"}))
    return message


def test_mar_and_absolute_mau_have_symbol_keys_longs_and_int_hints() -> None:
    mar = _decoded("_topo/0/B/qdrouter.ma", "MAR", MobileAddressRequest("R", 7).to_dict())
    assert mar.address == "_topo/0/B/qdrouter.ma" and mar.properties == {"opcode": "MAR"}
    assert [type(k) for k in mar.properties] == [str]
    assert mar.body == {"id": "R", "pv": 1, "area": "0", "have_seq": 7}
    assert all(type(k) is symbol for k in mar.body)
    assert type(mar.body["have_seq"]) is int and type(mar.body["pv"]) is int

    absolute = MobileAddressUpdate("R", 9, exist=["M0a", "M0b"], hints=[1, 3])
    mau = _decoded("_topo/0/B/qdrouter.ma", "MAU", absolute.to_dict())
    assert sorted(mau.body) == ["area", "exist", "hints", "id", "mobile_seq", "pv"]
    assert all(type(k) is symbol for k in mau.body)
    assert mau.body["exist"] == ["M0a", "M0b"] and all(type(a) is str for a in mau.body["exist"])
    assert [type(h) for h in mau.body["hints"]] == [int32, int32] and mau.body["hints"] == [1, 3]
    assert type(mau.body["mobile_seq"]) is int


def test_python_composed_bodies_keep_string_keys_and_longs() -> None:
    lsu = {"id": "R", "pv": 1, "area": "0", "instance": 5, "ls_seq": 2,
           "ls": {"id": "R", "area": "0", "ls_seq": 2, "peers": {"B": 4}}}
    got = _decoded("_topo/0/B/qdrouter", "LSU", lsu)
    assert got.body == lsu
    assert all(type(k) is str for k in got.body) and type(got.body["ls"]["peers"]["B"]) is int
