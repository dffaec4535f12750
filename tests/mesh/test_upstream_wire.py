"""A qdmesh router and a peer that speaks the routing protocol exactly as qdrouterd does.

This test needs no qdrouterd (it runs where the C router is not built), so the
peer "U" is a FAKE: this test's own AMQP client on the router's inter-router listener. It
attaches the links a connecting qdrouterd attaches (capabilities qd.router and
qd.router-data) and sends control bodies with upstream's field names and AMQP types:
HELLO/RA/LSU/LSR as upstream's Python router composes them (string keys, longs), MAU as its
C mobile-sync module does (symbol keys, int hints). Both directions are checked: the
router's own bodies carry those names and types, and from those bodies alone it takes U into
its mesh and routes messages between a client and U, with the router annotations of
Qpid Dispatch 0.7 book, 3.3.1, outcomes included.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, List

from proton import Link, Message, int32, symbol
from proton.reactor import LinkOption

from qdrouter.tools.management_client import ManagementClient
from tests.mesh.meshproc import NODE_TYPE, MeshRouter, Timers
from tests.router.amqpclient import ACCEPTED, Client, Net, ReceiverLink, SenderLink, msg
from tests.router.fixtures import stop_checked

FAKE = "U"
INSTANCE = 1700000000


class _InterRouter(LinkOption):
    """Source and target capability of an inter-router link; control links pre-settled."""

    def __init__(self, capability: str, presettled: bool) -> None:
        self.capability = symbol(capability)
        self.presettled = presettled

    def apply(self, link: Link) -> None:
        # One symbol, as qdrouterd sets it (pn_data_put_symbol on each terminus).
        link.source.capabilities.put_symbol(self.capability)
        link.target.capabilities.put_symbol(self.capability)
        if self.presettled and link.is_sender:
            link.snd_settle_mode = Link.SND_SETTLED


class FakeUpstreamPeer:
    """The four links of a connecting qdrouterd, and its control messages."""

    def __init__(self, net: Net, client: Client) -> None:
        self.net = net
        self.control_out = self._link(client, "qdlink.control.out", True, "qd.router")
        self.control_in = self._link(client, "qdlink.control.in", False, "qd.router")
        self.data_out = self._link(client, "qdlink.data.out", True, "qd.router-data")
        self.data_in = self._link(client, "qdlink.data.in", False, "qd.router-data")
        self.seen: List[str] = []
        self._next_hello = 0.0

    def _link(self, client: Client, name: str, sending: bool, capability: str) -> Any:
        option = _InterRouter(capability, presettled=capability == "qd.router")
        if sending:
            link = self.net.container.create_sender(client.conn, None, name=name, options=option)
            wrapper: Any = SenderLink(client, link)
        else:
            link = self.net.container.create_receiver(client.conn, None, name=name, options=option)
            wrapper = ReceiverLink(client, link, refill=True, settle=ACCEPTED)
            link.flow(200)
        client.links[name] = wrapper
        return wrapper

    def control(self, address: str, opcode: str, body: Dict[Any, Any]) -> None:
        self.control_out.send(Message(address=address, properties={"opcode": opcode}, body=body))

    def pump(self, cond: Callable[[], Any], timeout: float, what: str) -> None:
        """Run the client loop until ``cond``, saying HELLO every 0.5 s meanwhile."""
        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
            if time.monotonic() >= self._next_hello:
                self.control("_local/qdhello", "HELLO", {"id": FAKE, "pv": 1, "area": "0",
                                                         "instance": INSTANCE, "seen": self.seen})
                self._next_hello = time.monotonic() + 0.5
            self.net.process()

    def received(self, opcode: str) -> List[Message]:
        return [r.message for r in self.control_in.received
                if (r.message.properties or {}).get("opcode") == opcode]


def _assert_upstream_python_types(message: Message, keys: List[str]) -> Dict[Any, Any]:
    """A body upstream's Python router composes: string keys (never symbols), longs."""
    body = message.body
    assert isinstance(body, dict) and sorted(body) == sorted(keys), body
    assert all(type(key) is str for key in body), {k: type(k) for k in body}
    for key in ("pv", "instance", "ls_seq", "mobile_seq", "qdmesh_multicast"):
        if key in body:
            assert type(body[key]) is int, f"{key} must be an AMQP long: {type(body[key])}"
    assert body["id"] == "R" and type(body["id"]) is str
    if "area" in body:
        assert body["area"] == "0" and type(body["area"]) is str
    return body


def _assert_application_properties(message: Message, opcode: str) -> None:
    properties = message.properties or {}
    assert properties == {"opcode": opcode}, properties
    assert [type(key) for key in properties] == [str] and type(properties["opcode"]) is str


def test_router_and_a_peer_speaking_upstream_bodies_form_one_mesh(tmp_path: Path, net: Net) -> None:
    router = MeshRouter(tmp_path, "R", Timers())
    port = router.listen_for(FAKE, 1)
    router.write_config()
    router.start()
    management = ManagementClient(router.url, timeout=3.0)
    try:
        peer = FakeUpstreamPeer(net, net.connect(f"amqp://127.0.0.1:{port}"))

        # HELLO: the router says who it is on _local/qdhello; once it is seen, it is two-way.
        peer.pump(lambda: peer.received("HELLO"), 10, "the router's HELLO")
        hello = peer.received("HELLO")[0]
        assert hello.address == "_local/qdhello"
        _assert_application_properties(hello, "HELLO")
        body = _assert_upstream_python_types(hello, ["id", "pv", "area", "instance", "seen"])
        assert body["pv"] == 1 and body["seen"] in ([], [FAKE])
        peer.seen = ["R"]

        # The router asks for our link state (LSR) and advertises its own (RA).
        # (An RA of link-state sequence 0 may come first: the router's state before U.)
        peer.pump(lambda: peer.received("LSR") and any(m.body["ls_seq"] >= 1 for m in peer.received("RA")),
                  10, "LSR, and RA of the router's new link state")
        lsr = peer.received("LSR")[0]
        assert lsr.address == f"_topo/0/{FAKE}/qdrouter"
        _assert_application_properties(lsr, "LSR")
        _assert_upstream_python_types(lsr, ["id", "pv", "area"])
        for ra in peer.received("RA"):
            assert ra.address == "_topo/0/all/qdrouter"
            _assert_application_properties(ra, "RA")
            # qdmesh_multicast: the multicast-tree scheme (protocol/multicast_rules.py), a key
            # upstream's MessageRA does not read (it takes only the keys it knows).
            body = _assert_upstream_python_types(
                ra, ["id", "pv", "area", "instance", "ls_seq", "mobile_seq", "qdmesh_multicast"])
            assert type(body["qdmesh_multicast"]) is int

        # Our answers, typed as upstream's Python router composes them.
        my_ls = {"id": FAKE, "area": "0", "ls_seq": 1, "peers": {"R": 1}}
        peer.control("_topo/0/R/qdrouter", "LSU", {"id": FAKE, "pv": 1, "area": "0", "instance": INSTANCE,
                                                    "ls_seq": 1, "ls": my_ls})
        peer.control("_topo/0/R/qdrouter", "LSR", {"id": FAKE, "pv": 1, "area": "0"})
        peer.control("_topo/0/all/qdrouter", "RA", {"id": FAKE, "pv": 1, "area": "0", "instance": INSTANCE,
                                                     "ls_seq": 1, "mobile_seq": 0})
        # The answer comes to U; a changed link state is also flooded to _topo/0/all (a
        # qdmesh addition that upstream takes as any LSU).
        answer = f"_topo/0/{FAKE}/qdrouter"
        peer.pump(lambda: any(m.address == answer for m in peer.received("LSU")), 10, "the router's LSU")
        for lsu in peer.received("LSU"):
            assert lsu.address in (answer, "_topo/0/all/qdrouter"), lsu.address
            _assert_application_properties(lsu, "LSU")
            body = _assert_upstream_python_types(
                lsu, ["id", "pv", "area", "instance", "ls_seq", "ls", "qdmesh_multicast"])
            ls = body["ls"]
            assert sorted(ls) == ["area", "id", "ls_seq", "peers"] and all(type(k) is str for k in ls), ls
            assert ls["id"] == "R" and ls["ls_seq"] == body["ls_seq"] and type(ls["ls_seq"]) is int
        assert ls["peers"] == {FAKE: 1} and type(ls["peers"][FAKE]) is int, ls

        # The router lists U as a reachable router (qdstat -n), cost 1, no next hop.
        def u_listed() -> Any:
            return {str(r["id"]): r for r in management.query(NODE_TYPE)}.get(FAKE)
        peer.pump(u_listed, 15, "router.node to list U")
        assert u_listed()["cost"] == 1

        # A consumer on the router: a differential MAU as upstream's C module writes it.
        consumer = net.connect(router.url).receiver("closest/wire.r")
        peer.pump(lambda: peer.received("MAU"), 10, "the router's MAU")
        mau = peer.received("MAU")[-1]
        assert mau.address == "_topo/0/all/qdrouter.ma"
        _assert_application_properties(mau, "MAU")
        body = mau.body
        assert sorted(body) == ["add", "area", "del", "hints", "id", "mobile_seq", "pv"], body
        assert all(type(key) is symbol for key in body), {k: type(k) for k in body}
        assert body["id"] == "R" and body["area"] == "0" and type(body["pv"]) is int
        assert type(body["mobile_seq"]) is int and body["mobile_seq"] >= 1
        assert body["add"] == ["M0closest/wire.r"] and body["del"] == []
        assert body["hints"] == [2] and type(body["hints"][0]) is int32, body["hints"]   # 2: closest

        # U advertises a consumer of its own: the router must route a client's message to it.
        peer.control("_topo/0/all/qdrouter.ma", "MAU", {
            symbol("id"): FAKE, symbol("pv"): 1, symbol("area"): "0", symbol("mobile_seq"): 1,
            symbol("hints"): [int32(2)], symbol("add"): ["M0closest/wire.u"], symbol("del"): []})
        peer.control("_topo/0/all/qdrouter", "RA", {"id": FAKE, "pv": 1, "area": "0", "instance": INSTANCE,
                                                     "ls_seq": 1, "mobile_seq": 1})
        producer = net.connect(router.url).sender("closest/wire.u")
        peer.pump(lambda: producer.credit > 0, 10, "credit for closest/wire.u (a consumer at U)")
        producer.send(msg("to U"))
        peer.pump(lambda: peer.data_in.received and producer.all_settled(), 10, "the message at U, settled")
        arrived = peer.data_in.received[0].message
        assert arrived.body == "to U"
        annotations = {str(k): v for k, v in (arrived.annotations or {}).items()}
        assert annotations.get("x-opt-qd.ingress") == "0/R", annotations
        assert annotations.get("x-opt-qd.trace") == ["0/R"], annotations
        assert annotations.get("x-opt-qd.to") == "closest/wire.u", annotations
        assert [o.name for o in producer.outcomes.values()] == ["accepted"]

        # And U's message for the router's consumer: annotations kept, trace extended,
        # accepted back to U.
        peer.data_out.send(Message(body="from U", annotations={
            symbol("x-opt-qd.ingress"): "0/U", symbol("x-opt-qd.trace"): ["0/U"],
            symbol("x-opt-qd.to"): "closest/wire.r"}))
        peer.pump(lambda: consumer.received and peer.data_out.all_settled(), 10,
                  "U's message at the consumer")
        got = consumer.received[0].message
        annotations = {str(k): v for k, v in (got.annotations or {}).items()}
        assert got.body == "from U"
        assert annotations.get("x-opt-qd.ingress") == "0/U", annotations
        assert annotations.get("x-opt-qd.trace") == ["0/U", "0/R"], annotations
        assert [o.name for o in peer.data_out.outcomes.values()] == ["accepted"]
    finally:
        management.close()
        stop_checked([router])
