"""Lines and rings of four routers mixing qdmesh (Q*) and the C router qdrouterd 1.19 (C*):
alternating (Q1-C1-Q2-C2) and paired (Q1-Q2-C1-C2, one of each kind at the ends). In each,
anycast and multicast messages cross both ways between the ends, a consumer's outcome comes
back to the producer through both kinds of router, and mobile addresses are learned and
withdrawn everywhere. One mesh per topology, shared by its tests."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

import pytest

from tests.interop.mixed_topology import MixedMesh, is_c, line, remote_count, ring, running
from tests.router.amqpclient import MODIFIED, REJECTED, RELEASED, Net, WaitTimeout, msg, send_and_settle

TOPOLOGIES = {
    "line-alternating": (["Q1", "C1", "Q2", "C2"], line),
    "ring-alternating": (["Q1", "C1", "Q2", "C2"], ring),
    "line-paired": (["Q1", "Q2", "C1", "C2"], line),
    "ring-paired": (["Q1", "Q2", "C1", "C2"], ring),
}
_addresses = itertools.count()


@pytest.fixture(scope="module", params=sorted(TOPOLOGIES))
def mesh(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedMesh]:
    names, shape = TOPOLOGIES[request.param]
    workdir: Path = tmp_path_factory.mktemp(request.param)
    yield from running(MixedMesh(workdir, names, shape(names)),
                       f"{request.param}: every router to list all four (router.node)")


def ends(mesh: MixedMesh) -> List[Tuple[str, str]]:
    """(producer's router, consumer's router): the two ends, each way."""
    first, last = mesh.names[0], mesh.names[-1]
    return [(first, last), (last, first)]


def await_consumers(net: Net, mesh: MixedMesh, address: str, consumers: Sequence[str]) -> None:
    """Until every router knows each router in ``consumers`` (but itself) has a consumer."""
    expected = {n: len(set(consumers) - {n}) for n in mesh.names}

    def counts() -> Dict[str, int]:
        return {n: remote_count(mesh[n], address) for n in mesh.names}
    try:
        net.wait(lambda: counts() == expected, 30,
                 f"{address}'s consumers on {consumers} known on every router (MAU)")
    except WaitTimeout as timeout:
        raise WaitTimeout(f"{timeout}: remoteCount {counts()}, expected {expected}") from None


@pytest.mark.parametrize("distribution", ["closest", "balanced"])
def test_anycast_crosses_both_kinds_both_ways(mesh: MixedMesh, net: Net, distribution: str) -> None:
    for producer_at, consumer_at in ends(mesh):
        anycast_one_way(net, mesh, producer_at, consumer_at, distribution)


def anycast_one_way(net: Net, mesh: MixedMesh, producer_at: str, consumer_at: str, distribution: str) -> None:
    address = f"{distribution}/{producer_at}-to-{consumer_at}-{next(_addresses)}"
    receiver = net.connect(mesh[consumer_at].url).receiver(address)
    await_consumers(net, mesh, address, [consumer_at])
    sender = net.connect(mesh[producer_at].url).sender(address)
    net.wait(lambda: sender.credit > 0, 10, f"credit on {producer_at} for {address}")
    bodies = [f"{address} #{i}" for i in range(10)]
    outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], 15)
    # Once every router knows the consumer, nothing comes back released.
    assert [o.name for o in outcomes] == ["accepted"] * 10, (producer_at, consumer_at)
    net.wait(lambda: len(receiver.received) == 10, 10, f"10 messages at {consumer_at}")
    assert receiver.bodies() == bodies


def test_consumer_outcomes_reach_producer_across_both_kinds(mesh: MixedMesh, net: Net) -> None:
    """A consumer's rejected, released and modified (delivery-failed, undeliverable-here)
    come back to the producer as given, through every router between them."""
    for producer_at, consumer_at in ends(mesh):
        outcomes_one_way(net, mesh, producer_at, consumer_at)


def outcomes_one_way(net: Net, mesh: MixedMesh, producer_at: str, consumer_at: str) -> None:
    states = [REJECTED, RELEASED, MODIFIED]
    address = f"closest/outcome-{next(_addresses)}"
    receiver = net.connect(mesh[consumer_at].url).receiver(address, settle=None)
    await_consumers(net, mesh, address, [consumer_at])
    sender = net.connect(mesh[producer_at].url).sender(address)
    net.wait(lambda: sender.credit > 0, 10, f"credit on {producer_at}")
    tags = [sender.send(msg(f"judge me {n}")) for n in range(len(states))]
    net.wait(lambda: len(receiver.unsettled) == len(states), 10, f"the messages, unsettled, at {consumer_at}")
    assert not sender.outcomes  # no router settles them on the consumer's behalf
    for state in states:
        receiver.settle_unsettled(state, count=1, failed=True, undeliverable=True)
    net.wait(lambda: all(t in sender.outcomes for t in tags), 10, f"the outcomes back at {producer_at}")
    outcomes = [sender.outcomes[t] for t in tags]
    assert [o.state for o in outcomes] == states, (producer_at, consumer_at, [o.name for o in outcomes])
    assert outcomes[2].failed and outcomes[2].undeliverable


def test_multicast_reaches_every_receiver_once(mesh: MixedMesh, net: Net) -> None:
    """A line has one path between any two routers: every receiver gets each message once.
    In a ring, qdrouterd 1.19 forwards multicast by trace exclusion only (forwarder.c never
    checks valid origins for data, docs/routing.md), so a C router sends a copy on toward
    a router that another path serves too: an all-C ring delivers everything twice. A qdmesh
    router in a mesh with C routers forwards as they do (protocol/multicast_rules.py), so
    receivers of either kind get the copies they would in the all-C ring, each by another
    neighbour (tests/interop/test_mixed_paths.py compares the counts)."""
    address = f"multicast/all-{next(_addresses)}"
    clients = {n: net.connect(mesh[n].url) for n in mesh.names}
    receivers = {n: clients[n].receiver(address) for n in mesh.names}
    await_consumers(net, mesh, address, mesh.names)
    for source in (mesh.names[0], mesh.names[-1]):
        sender = clients[source].sender(address)
        net.wait(lambda s=sender: s.credit > 0, 10, f"credit on {source}")
        outcomes = send_and_settle(net, sender, [msg(f"{source} #{i}") for i in range(5)], 15)
        assert {o.name for o in outcomes} == {"accepted"}
    expected = sorted(f"{s} #{i}" for s in (mesh.names[0], mesh.names[-1]) for i in range(5))
    net.wait(lambda: all(set(r.bodies()) == set(expected) for r in receivers.values()), 10,
             "every message at every receiver")
    net.pump(1.0)  # time for any extra copy to arrive
    for name, receiver in receivers.items():
        if not mesh.has_loop:
            assert sorted(receiver.bodies()) == expected, name
        else:
            assert set(receiver.bodies()) == set(expected), name
            assert max(Counter(receiver.bodies()).values()) <= 2, name  # the all-C ring's twice
            if not is_c(name):  # (the C router strips the trace a receiver would see)
                assert_copies_by_distinct_neighbours(receiver.received, name)


def assert_copies_by_distinct_neighbours(received: Sequence[object], at: str) -> None:
    """Each copy of one message reached router ``at`` from a different neighbour (its trace's
    last hop before ``at``): no router sent one message twice on one link."""
    last_hops: dict = {}
    for rec in received:
        message = rec.message  # type: ignore[attr-defined]
        trace = (message.annotations or {}).get("x-opt-qd.trace") or []
        hop = trace[-2] if len(trace) >= 2 else "local"
        assert hop not in last_hops.setdefault(message.body, []), (at, message.body, trace)
        last_hops[message.body].append(hop)


def test_mobile_addresses_learned_and_withdrawn_everywhere(mesh: MixedMesh, net: Net) -> None:
    """A consumer on each router, of each kind, becomes known to all the others (MAU), and
    its leaving is too (a producer elsewhere would then get no credit for it)."""
    addresses = {at: f"closest/mau-{at}-{next(_addresses)}" for at in mesh.names}
    receivers = {at: net.connect(mesh[at].url).receiver(address) for at, address in addresses.items()}
    for at, address in addresses.items():
        await_consumers(net, mesh, address, [at])
    for receiver in receivers.values():
        receiver.close()
    for address in addresses.values():
        await_consumers(net, mesh, address, [])
