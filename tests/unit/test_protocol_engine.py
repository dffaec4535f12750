"""RoutingEngine instances wired together in-process.

The Network below plays the I/O layer: it delivers each Outbound on its connection, or
routes it hop by hop with forward_targets(), exactly as the router's I/O layer must.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

from qdrouter.protocol import HELLO_ADDRESS, Outbound, RoutingEngine, RoutingEvent, router_address
from qdrouter.protocol.messages import Hello, LinkState, LinkStateUpdate, RouterAdvertisement

# (receiving router, opcode, body, address, origin, connection key at the receiver, trace)
Pending = Tuple[str, str, Dict[str, Any], str, str, Optional[str], Tuple[str, ...]]


class Network:
    def __init__(self, names: List[str], links: List[Tuple[str, str]], **timers: float) -> None:
        self.events: Dict[str, List[RoutingEvent]] = {n: [] for n in names}
        self.engines = {n: RoutingEngine(n, instance=1, on_event=self.events[n].append, **timers)
                        for n in names}
        self.queue: Deque[Pending] = deque()
        self.now = 0.0
        self.sent: Dict[str, int] = {}
        self.links: Set[Tuple[str, str]] = set()
        for a, b in links:
            self.connect(a, b)

    # Connection key at router X for its link to Y is the string "Y".
    def connect(self, a: str, b: str, cost: int = 1) -> None:
        self.links.add((a, b))
        self._send(a, self.engines[a].neighbor_link_up(b, cost))
        self._send(b, self.engines[b].neighbor_link_up(a, cost))

    def disconnect(self, a: str, b: str) -> None:
        self.links.discard((a, b))
        self.links.discard((b, a))
        self.engines[a].neighbor_link_down(b)
        self.engines[b].neighbor_link_down(a)

    def remove_router(self, name: str) -> None:
        for a, b in list(self.links):
            if name in (a, b):
                self.disconnect(a, b)
        del self.engines[name]

    def _linked(self, a: str, b: str) -> bool:
        return (a, b) in self.links or (b, a) in self.links

    def _send(self, sender: str, outs: List[Outbound]) -> None:
        for out in outs:
            self.sent[out.opcode] = self.sent.get(out.opcode, 0) + 1
            if out.via is not None:
                self._hop(sender, str(out.via), out.opcode, out.body, out.address, sender, (sender,))
            else:
                self._route(sender, out.opcode, out.body, out.address, sender)

    def _hop(self, here: str, peer: str, opcode: str, body: Dict[str, Any], address: str,
             origin: str, trace: Tuple[str, ...]) -> None:
        if peer in self.engines and self._linked(here, peer):
            self.queue.append((peer, opcode, body, address, origin, here, trace))

    def _route(self, here: str, opcode: str, body: Dict[str, Any], address: str, origin: str) -> None:
        delivery = self.engines[here].forward_targets(address, origin)
        for conn in delivery.conns:
            self._hop(here, str(conn), opcode, body, address, origin, (here,))

    def pump(self) -> None:
        for _ in range(100000):
            if not self.queue:
                return
            here, opcode, body, address, origin, conn, trace = self.queue.popleft()
            engine = self.engines.get(here)
            if engine is None:
                continue
            if address == HELLO_ADDRESS:
                self._send(here, engine.on_message(opcode, body, conn, self.now))
                continue
            if here in trace:
                continue  # the router's loop guard: x-opt-qd.trace already names it
            delivery = engine.forward_targets(address, origin)
            for next_conn in delivery.conns:
                if next_conn != conn:
                    self._hop(here, str(next_conn), opcode, body, address, origin, (*trace, here))
            if delivery.local:
                self._send(here, engine.on_message(opcode, body, conn, self.now))
        raise AssertionError("message storm")

    def run(self, seconds: float, step: float = 0.5) -> None:
        end = self.now + seconds
        while self.now < end:
            self.now += step
            for name, engine in list(self.engines.items()):
                self._send(name, engine.tick(self.now))
            self.pump()

    def converged(self) -> bool:
        names = set(self.engines)
        adjacency: Dict[str, Set[str]] = {n: set() for n in names}
        for a, b in self.links:
            adjacency[a].add(b)
            adjacency[b].add(a)
        for name, engine in self.engines.items():
            table = engine.routing_table()
            if set(table) != names - {name}:
                return False
            for dest in table:  # following next hops must reach dest over real links
                here, seen = name, 0
                while here != dest:
                    hop = self.engines[here].routing_table()[dest][0]
                    if hop not in adjacency[here] or seen > len(names):
                        return False
                    here, seen = hop, seen + 1
        return True


def ring_links(names: List[str]) -> List[Tuple[str, str]]:
    return [(names[i], names[(i + 1) % len(names)]) for i in range(len(names))]


def test_ring_converges_within_protocol_timers() -> None:
    names = [f"R{i}" for i in range(6)]
    net = Network(names, [*ring_links(names), ("R0", "R3")])
    for _ in range(20):
        net.run(0.5)
        if net.converged():
            break
    # HELLO (1 s) + RA/LSR/LSU exchanges ripple hop by hop; well inside raIntervalFlux.
    assert net.converged() and net.now <= 4.0, net.now
    assert net.engines["R0"].routing_table()["R3"] == ("R3", 1)
    assert net.engines["R1"].routing_table()["R4"][1] == 3
    assert any(e.kind == "neighbor_up" for e in net.events["R0"])
    assert any(e.kind == "routes" for e in net.events["R0"])


def test_reconvergence_after_removing_a_router() -> None:
    names = [f"R{i}" for i in range(5)]
    net = Network(names, ring_links(names))
    net.run(6)
    assert net.converged()
    net.remove_router("R2")
    net.run(6)
    assert net.converged()
    assert net.engines["R1"].routing_table()["R3"] == ("R0", 3)
    assert "R2" not in net.engines["R0"].routing_table()


def test_silent_router_is_dropped_by_hello_timeout() -> None:
    # No link-down notification: the neighbours notice only through missing HELLOs.
    names = ["A", "B", "C"]
    net = Network(names, [("A", "B"), ("B", "C")])
    net.run(4)
    assert net.converged()
    del net.engines["C"]  # C dies silently; B keeps the connection open
    net.run(3.5)
    assert "C" not in net.engines["B"].neighbors()
    net.run(2)
    assert "C" not in net.engines["A"].routing_table()


def test_mobile_addresses_propagate_and_withdraw() -> None:
    names = [f"R{i}" for i in range(4)]
    net = Network(names, ring_links(names))
    net.run(4)
    net.engines["R2"].local_address_added("queue.a")
    net.engines["R3"].local_address_added("queue.a")
    net.engines["R0"].local_address_added("topic.b")
    net.run(2)
    assert net.engines["R1"].remote_addresses() == {"queue.a": {"R2", "R3"}, "topic.b": {"R0"}}
    assert net.engines["R0"].remote_addresses() == {"queue.a": {"R2", "R3"}}
    net.engines["R3"].local_address_removed("queue.a")
    net.run(2)
    assert net.engines["R1"].remote_addresses()["queue.a"] == {"R2"}
    assert any(e.kind == "addresses" for e in net.events["R1"])


def test_late_joiner_catches_up_with_mar() -> None:
    names = ["A", "B"]
    net = Network(names, [("A", "B")])
    net.engines["A"].local_address_added("x")
    net.run(4)
    net.engines["C"] = RoutingEngine("C", instance=1)
    net.connect("B", "C")
    net.run(6)  # C learns A's mobile_seq from its RA, sends MAR, receives an absolute MAU
    assert net.engines["C"].remote_addresses() == {"x": {"A"}}


def test_outbound_addresses_and_opcodes() -> None:
    engine = RoutingEngine("A", instance=5)
    (hello,) = engine.neighbor_link_up("c1", 1)
    assert (hello.address, hello.opcode, hello.via) == ("_local/qdhello", "HELLO", "c1")
    assert hello.body == {"id": "A", "pv": 1, "area": "0", "instance": 5, "seen": []}
    assert hello.application_properties == {"opcode": "HELLO"}
    out = engine.tick(0.0)
    ra = [o for o in out if o.opcode == "RA"]
    assert ra and ra[0].address == "_topo/0/all/qdrouter" and ra[0].via is None
    assert router_address("B") == "_topo/0/B/qdrouter"
    engine.local_address_added("q")
    mau = [o for o in engine.tick(1.0) if o.opcode == "MAU"]
    assert mau[0].address == "_topo/0/all/qdrouter.ma"
    assert mau[0].body["add"] == ["M0q"] and mau[0].body["del"] == [] and mau[0].body["hints"] == [3]


def test_malformed_and_newer_messages_are_dropped() -> None:
    engine = RoutingEngine("A")
    assert engine.on_message("RA", {"id": "B"}, "c1", 0.0) == []
    assert engine.counters.errors == 1
    assert engine.on_message("RA", {"id": "B", "pv": 9}, "c1", 0.0) == []
    assert engine.counters.incompatible == {"B"}


def test_kill_restart_schedule_recovers_routes_and_addresses() -> None:
    """The chaos test's schedule on a ring with a chord, at the protocol level: after each
    kill or restart every router again routes to every other and knows C's consumer."""
    edges = [("B", "A"), ("C", "B"), ("D", "C"), ("E", "D"), ("E", "A"), ("E", "B")]
    timers: Dict[str, float] = dict(hello_interval=1, hello_max_age=3, ra_interval=30, ra_interval_flux=4)
    net = Network(list("ABCDE"), edges, **timers)
    net.engines["C"].local_address_added("x")
    net.run(6)

    def recovered() -> bool:
        return net.converged() and all(e.remote_addresses().get("x") == {"C"}
                                       for n, e in net.engines.items() if n != "C")

    assert recovered()
    instance = 1
    for action, rid in [("kill", "B"), ("restart", "B"), ("kill", "D"), ("restart", "D"),
                        ("kill", "E"), ("restart", "E"), ("kill", "B"), ("restart", "B")]:
        if action == "kill":
            net.remove_router(rid)
        else:
            instance += 1
            net.engines[rid] = RoutingEngine(rid, instance=instance, on_event=net.events[rid].append,
                                             **timers)
            for a, b in edges:
                if rid in (a, b) and a in net.engines and b in net.engines:
                    net.connect(a, b)
        waited = 0.0
        while not recovered():
            assert waited < 3 + 4 + 2, f"no recovery {waited}s after {action} {rid}"
            net.run(0.25, step=0.25)
            waited += 0.25


def test_neighbour_with_stale_link_state_is_asked_directly() -> None:
    """B restarts and learns C's link state through others while the B-C link is down (so it
    does not list B); then D dies (C's other way out) and the B-C link returns. B must ask C
    for its new link state over that link, though no path to C is known: waiting for a route
    first would leave C cut off until remoteLsMaxAge (60 s) expired the stale state."""
    edges = [("B", "A"), ("C", "B"), ("D", "C"), ("E", "D"), ("E", "A"), ("E", "B")]
    timers: Dict[str, float] = dict(hello_interval=1, hello_max_age=3, ra_interval=30, ra_interval_flux=4,
                                    remote_ls_max_age=60)
    net = Network(list("ABCDE"), edges, **timers)
    net.run(6)
    assert net.converged()
    net.remove_router("B")
    net.run(5)
    net.engines["B"] = RoutingEngine("B", instance=2, on_event=net.events["B"].append, **timers)
    net.connect("B", "A")
    net.connect("E", "B")
    net.run(4)   # B now holds C's link state {D}: the B-C link is not up yet
    net.remove_router("D")
    net.run(1)
    net.connect("C", "B")
    waited = 0.0
    while not net.converged():
        assert waited < 3 + 4 + 2, f"C still cut off from B {waited}s after their link came back"
        net.run(0.25, step=0.25)
        waited += 0.25


def _engine_with_neighbours(my_id: str, neighbours: Dict[str, int]) -> RoutingEngine:
    engine = RoutingEngine(my_id, instance=1)
    for peer, cost in neighbours.items():
        engine.neighbor_link_up(peer, cost)
        engine.on_message("HELLO", Hello(peer, seen=[my_id], instance=1).to_dict(), peer, 0.0)
    engine.tick(0.0)
    return engine


def _lsu(router_id: str, ls_seq: int, peers: Dict[str, int]) -> Dict[str, Any]:
    return LinkStateUpdate(router_id, ls_seq, LinkState(router_id, ls_seq, peers), instance=1).to_dict()


def test_changed_link_state_is_flooded_to_every_neighbour() -> None:
    """Routers must not depend on an LSR (routed by their possibly stale tables) to learn of a
    change: the changed link state itself goes to all routers, with the RA."""
    engine = _engine_with_neighbours("B", {"A": 1})
    engine.neighbor_link_up("D", 1)
    engine.on_message("HELLO", Hello("D", seen=["B"], instance=1).to_dict(), "D", 0.5)
    out = engine.tick(1.0)
    floods = [o for o in out if o.opcode == "LSU" and o.address == router_address("all")]
    assert len(floods) == 1 and floods[0].via is None
    assert floods[0].body["ls"]["peers"] == {"A": 1, "D": 1}
    assert set(engine.forward_targets(floods[0].address, "B").conns) == {"A", "D"}
    assert [o.opcode for o in engine.tick(1.5) if o.opcode == "LSU"] == [], "flooded once per change"


def test_link_state_request_also_goes_back_the_way_the_advertisement_came() -> None:
    """The UNEQUAL mesh of tests/mesh (A-B 1, A-C 10, B-D 1, D-C 1) as B saw it in a CI run:
    the link states of C and D held at B predate the D-C link, so B routes to C via A, while A
    (up to date) routes to C via B: an LSR sent only along B's route bounced between A and B
    until the loop guard dropped it, and B stayed stale. C's RA reached B through D, so the
    LSR must go that way too."""
    engine = _engine_with_neighbours("B", {"A": 1, "D": 1})
    for sender, (seq, peers) in {"A": (2, {"B": 1, "C": 10}), "C": (1, {"A": 10}),
                                 "D": (1, {"B": 1})}.items():
        engine.on_message("LSU", _lsu(sender, seq, peers), "A" if sender == "C" else sender, 0.5)
    assert engine.routing_table()["C"] == ("A", 11)
    ra = RouterAdvertisement("C", ls_seq=2, mobile_seq=0, instance=1).to_dict()
    out = engine.on_message("RA", ra, "D", 1.0)
    lsrs = sorted(str(o.via) for o in out if o.opcode == "LSR" and o.address == router_address("C"))
    assert lsrs == ["A", "D"]
    engine.on_message("LSU", _lsu("C", 2, {"A": 10, "D": 1}), "D", 1.1)
    engine.on_message("LSU", _lsu("D", 2, {"B": 1, "C": 1}), "D", 1.2)
    assert engine.routing_table()["C"] == ("D", 2)


def test_link_state_answer_also_goes_back_the_way_the_request_came() -> None:
    engine = _engine_with_neighbours("C", {"A": 10, "D": 1})
    engine.on_message("LSU", _lsu("A", 2, {"C": 10, "B": 1}), "A", 0.5)
    engine.on_message("LSU", _lsu("B", 1, {"A": 1}), "A", 0.5)   # stale: no B-D link yet
    assert engine.routing_table()["B"][0] == "A"
    out = engine.on_message("LSR", {"id": "B", "pv": 1, "area": "0"}, "D", 1.0)
    answers = sorted(str(o.via) for o in out if o.opcode == "LSU")
    assert answers == ["A", "D"]


def test_mobile_addresses_go_only_to_neighbours_whose_link_state_lists_us() -> None:
    """qdrouterd takes a MAU from a router it knows of but has no path to yet, credits the
    address's senders and releases their messages until its next path computation, which
    includes us only once its own link state lists us. So MAUs wait for that; the neighbour
    asks (MAR) when our RA shows the newer mobile_seq."""
    engine = _engine_with_neighbours("B", {"A": 1, "C": 1})
    engine.on_message("LSU", _lsu("A", 1, {"B": 1}), "A", 0.5)
    ma_all = "_topo/0/all/qdrouter.ma"
    assert set(engine.forward_targets(ma_all, "B").conns) == {"A"}
    assert set(engine.forward_targets(router_address("all"), "B").conns) == {"A", "C"}, "RA and LSU still go"
    engine.on_message("LSU", _lsu("C", 1, {"B": 1}), "C", 0.6)
    assert set(engine.forward_targets(ma_all, "B").conns) == {"A", "C"}


def test_unanswered_mobile_address_request_is_repeated() -> None:
    """A router that just (re)joined asks a neighbour for its addresses (MAR) as soon as it
    has a path; qdrouterd drops its answer while it has no path back (it computes paths once
    a second). Waiting for its next RA (4 s in flux) left the router releasing the traffic
    its neighbours already sent through it (tests/interop/test_mixed_failover.py in CI), so
    the request is repeated each second until a MAU catches us up, and then no more."""
    engine = _engine_with_neighbours("B", {"A": 1})
    engine.on_message("LSU", _lsu("A", 1, {"B": 1}), "A", 0.5)
    ra = RouterAdvertisement("A", ls_seq=1, mobile_seq=3, instance=1).to_dict()
    out = engine.on_message("RA", ra, "A", 1.0)
    assert [o.opcode for o in out if o.opcode == "MAR"] == ["MAR"]

    def mars(now: float) -> List[Outbound]:
        engine.on_message("HELLO", Hello("A", seen=["B"], instance=1).to_dict(), "A", now)
        return [o for o in engine.tick(now) if o.opcode == "MAR"]

    assert mars(1.5) == [], "not before a second"
    again = mars(2.1)
    assert len(again) == 1 and again[0].via == "A" and again[0].body["have_seq"] == 0
    assert mars(2.5) == []
    assert len(mars(3.2)) == 1
    mau = {"id": "A", "pv": 1, "area": "0", "mobile_seq": 3, "exist": ["M0x"], "hints": [2]}
    engine.on_message("MAU", mau, "A", 3.3)
    assert engine.remote_addresses() == {"x": {"A"}}
    assert mars(4.5) == [] and mars(6.0) == [], "answered: no more requests"
