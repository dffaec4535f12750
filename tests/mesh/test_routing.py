"""Anycast (closest, balanced) and multicast across meshes of interior routers, end to end."""

from __future__ import annotations

import pytest

from tests.mesh.conftest import FULL4, LINE3, RING5_CHORD, MeshFactory
from tests.mesh.test_topology import UNEQUAL
from tests.mesh.traffic import trace_of, wait_received, wait_remote
from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle


@pytest.mark.parametrize("prefix", ["closest", "balanced"])
def test_anycast_across_line(mesh_factory: MeshFactory, net: Net, prefix: str) -> None:
    mesh = mesh_factory(LINE3)
    addr = f"{prefix}/e2e"
    rcv = net.connect(mesh["C"].url).receiver(addr)
    wait_remote(mesh, "A", addr, 1, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(50)], timeout=15)
    assert [o.name for o in outcomes] == ["accepted"] * 50
    wait_received(net, [rcv], 50)
    assert rcv.bodies() == list(range(50))
    # every router on the way appends itself to the trace, the egress router included
    assert trace_of(rcv.received[0]) == ["0/A", "0/B", "0/C"], rcv.received[0].message.annotations
    # the ingress router (the first one the message met) is kept unaltered by the others
    annotations = {str(k): v for k, v in (rcv.received[0].message.annotations or {}).items()}
    assert annotations.get("x-opt-qd.ingress") == "0/A", annotations
    # qdstat -a's in/out/thru, as qdrouterd counts them: the 50 entered the mesh at A, were
    # passed on by A and B, and left it at C.
    counts = {}
    for rid in "ABC":
        row = next(r for r in mesh.mgmt(rid).query("org.apache.qpid.dispatch.router.address")
                   if r["key"] == f"M0{addr}")
        counts[rid] = (row["deliveriesIngress"], row["deliveriesTransit"], row["deliveriesEgress"])
    assert counts == {"A": (50, 50, 0), "B": (0, 50, 0), "C": (0, 0, 50)}
    # qdstat -g's Transit Count: what each router forwarded to another one.
    transit = {rid: mesh.mgmt(rid).query("org.apache.qpid.dispatch.router")[0]["deliveriesTransit"]
               for rid in "ABC"}
    assert transit["A"] >= 50 and transit["B"] >= 50 and transit["C"] < 50, transit


def test_forwarding_follows_cheapest_path_not_fewest_hops(mesh_factory: MeshFactory, net: Net) -> None:
    """UNEQUAL: A-C direct costs 10, A-B-D-C costs 3; traffic A->C must go via B and D."""
    mesh = mesh_factory(UNEQUAL)
    rcv = net.connect(mesh["C"].url).receiver("closest/cheap")
    wait_remote(mesh, "A", "closest/cheap", 1, net=net)
    snd = net.connect(mesh["A"].url).sender("closest/cheap")
    assert send_and_settle(net, snd, [msg("x")])[0].state == ACCEPTED
    wait_received(net, [rcv], 1)
    assert trace_of(rcv.received[0]) == ["0/A", "0/B", "0/D", "0/C"]


def test_closest_prefers_local_then_lowest_cost(mesh_factory: MeshFactory, net: Net) -> None:
    mesh = mesh_factory(UNEQUAL)
    addr = "closest/pref"
    on_c = net.connect(mesh["C"].url).receiver(addr)      # cost 3 from A
    on_d = net.connect(mesh["D"].url).receiver(addr)      # cost 2 from A
    wait_remote(mesh, "A", addr, 2, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(20)])
    assert {o.name for o in outcomes} == {"accepted"}
    assert (len(on_d.received), len(on_c.received)) == (20, 0), "closest must pick the cheaper router D"
    local = net.connect(mesh["A"].url).receiver(addr)
    net.pump(0.3)
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(20)])
    assert {o.name for o in outcomes} == {"accepted"}
    assert (len(local.received), len(on_d.received), len(on_c.received)) == (20, 20, 0), \
        "closest must prefer the local consumer"


@pytest.mark.parametrize("where", ["BCD", "ABCD"], ids=["remote-only", "with-local"])
def test_balanced_spreads_across_routers(mesh_factory: MeshFactory, net: Net, where: str) -> None:
    """Full mesh of 4, sender on A: each consumer router has its own link from A, so
    outstanding + cost must spread the load over every router (local one included)."""
    mesh = mesh_factory(FULL4)
    addr = "balanced/spread"
    # Consumers keep deliveries unsettled, so each one's outstanding count grows.
    rcvs = [net.connect(mesh[r].url).receiver(addr, credit=200, settle=None) for r in where]
    wait_remote(mesh, "A", addr, len(where.replace("A", "")), net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    tags = [snd.send(msg(i)) for i in range(120)]
    wait_received(net, rcvs, 120)
    counts = dict(zip(where, (len(r.received) for r in rcvs)))
    print("balanced spread:", counts)
    assert all(c > 0 for c in counts.values()), f"balanced left a router idle: {counts}"
    assert max(counts.values()) <= 80, f"balanced piled up on one router: {counts}"
    for r in rcvs:
        r.settle_unsettled(ACCEPTED)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "outcomes of balanced deliveries")
    assert snd.outcome_counts() == {"accepted": 120}


def test_balanced_weighs_remote_consumers_by_cost(mesh_factory: MeshFactory, net: Net) -> None:
    """B (cost 1) and C (cost 5) each reached from A over a link of its own, consumers
    holding every delivery unsettled: A picks the lowest outstanding-on-the-link + cost, so
    B takes the first 4 more than C (the cost difference), then they alternate. B, whose
    own consumer gets busy, must never send one back through A toward C."""
    mesh = mesh_factory([("B", "A", 1), ("C", "A", 5)])
    addr = "balanced/cost"
    rcvs = {r: net.connect(mesh[r].url).receiver(addr, credit=100, settle=None) for r in "BC"}
    wait_remote(mesh, "A", addr, 2, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    tags = [snd.send(msg(i)) for i in range(40)]
    wait_received(net, list(rcvs.values()), 40)
    counts = {r: len(rcv.received) for r, rcv in rcvs.items()}
    print("balanced by cost:", counts)
    assert 3 <= counts["B"] - counts["C"] <= 5, f"the cost difference (4) must show: {counts}"
    assert {tuple(trace_of(r)) for r in rcvs["C"].received} == {("0/A", "0/C")}
    for rcv in rcvs.values():
        rcv.settle_unsettled(ACCEPTED)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "outcomes of balanced deliveries")
    assert snd.outcome_counts() == {"accepted": 40}


@pytest.mark.c_router_bug("on a mesh with redundant paths qdrouterd delivers each multicast message to a "
                          "receiver two or three times (B got 60 of 30, A 90 of 30; the same on"
                          " a ring of four)")
@pytest.mark.parametrize("origin", ["A", "C"])
def test_multicast_one_copy_per_consumer_over_redundant_paths(mesh_factory: MeshFactory, net: Net,
                                                               origin: str) -> None:
    mesh = mesh_factory(RING5_CHORD)
    addr = "multicast/all"
    rcvs = {r: net.connect(mesh[r].url).receiver(addr) for r in "ABCDE"}
    second_on_d = net.connect(mesh["D"].url).receiver(addr)
    wait_remote(mesh, origin, addr, 4, net=net)
    snd = net.connect(mesh[origin].url).sender(addr)
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(30)])
    assert {o.name for o in outcomes} == {"accepted"}
    every = [*rcvs.values(), second_on_d]
    wait_received(net, every, 30 * len(every))
    net.pump(1.0)   # duplicates over the chord would arrive now
    for name, r in [*rcvs.items(), ("D#2", second_on_d)]:
        assert sorted(r.bodies()) == list(range(30)), f"{name} got {len(r.received)}: {r.bodies()}"
