"""Meshes whose equal-cost paths and loops test that qdmesh routers compute paths, and forward,
exactly as the C router (qdrouterd 1.19) would in their place: each mixed mesh beside the
all-C mesh of the same shape and router ids.

* The ring Q1-C2-Q3-C4-Q1: Q1 and Q3 are two equal hops apart both ways round. qdrouterd's
  balanced forwarder releases a message that reaches it off the origin's shortest path
  (valid origins), so a qdmesh router that broke the tie otherwise than by router id had
  every balanced message between Q1 and Q3 released by a C router.
* Multicast in a mesh with loops: qdrouterd floods (next hop of every destination, never
  back along the trace) and releases a copy whose trace is longer than the radius + 1; a
  receiver gets as many copies in the mixed mesh as in the all-C one, wherever it is.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

import pytest

from tests.interop.mixed_topology import MixedMesh, query, remote_count, ring, running
from tests.mesh.meshproc import NODE_TYPE
from tests.router.amqpclient import Net, WaitTimeout, msg, send_and_settle

NAMES = ["Q1", "C2", "Q3", "C4"]


def full_mesh(names: Sequence[str]) -> List[Tuple[str, str]]:
    """Every router connects to every one started before it."""
    return [(b, a) for i, a in enumerate(names) for b in names[i + 1:]]


SHAPES = {"ring": ring, "full-mesh": full_mesh}
_addresses = itertools.count()


def _mesh(tmp_path_factory: pytest.TempPathFactory, shape: str, all_c: bool) -> Iterator[MixedMesh]:
    label = f"{shape}-{'all-c' if all_c else 'mixed'}"
    workdir: Path = tmp_path_factory.mktemp(label)
    yield from running(MixedMesh(workdir, NAMES, SHAPES[shape](NAMES), all_c=all_c),
                       f"{label}: every router to list all four (router.node)")


@pytest.fixture(scope="module", params=sorted(SHAPES))
def meshes(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, MixedMesh]]:
    """The mixed mesh of a shape and the all-C mesh of the same shape and ids, both running."""
    shape = request.param
    mixed = _mesh(tmp_path_factory, shape, False)
    all_c = _mesh(tmp_path_factory, shape, True)
    try:
        yield {"mixed": next(mixed), "all-c": next(all_c)}
    finally:
        for gen in (all_c, mixed):
            gen.close()


def await_consumers(net: Net, mesh: MixedMesh, address: str, consumers: Sequence[str]) -> None:
    """Until every router knows each router in ``consumers`` (but itself) has a consumer."""
    expected = {n: len(set(consumers) - {n}) for n in mesh.names}

    def counts() -> Dict[str, int]:
        return {n: remote_count(mesh[n], address) for n in mesh.names}
    try:
        net.wait(lambda: counts() == expected, 30, f"{address}'s consumers on {consumers} known everywhere")
    except WaitTimeout as timeout:
        raise WaitTimeout(f"{timeout}: remoteCount {counts()}, expected {expected}") from None


@pytest.mark.parametrize("kind", ["mixed", "all-c"])
@pytest.mark.parametrize("producer_at,consumer_at", [("Q1", "Q3"), ("Q3", "Q1"), ("C2", "C4"), ("C4", "C2")])
def test_balanced_between_routers_two_equal_paths_apart(meshes: Dict[str, MixedMesh], net: Net, kind: str,
                                                        producer_at: str, consumer_at: str) -> None:
    """Every message accepted and received, none released, between routers of either kind;
    in the ring they are two hops apart both ways round (in the full mesh, one)."""
    mesh = meshes[kind]
    address = f"balanced/{producer_at}-to-{consumer_at}-{next(_addresses)}"
    receiver = net.connect(mesh[consumer_at].url).receiver(address)
    await_consumers(net, mesh, address, [consumer_at])
    sender = net.connect(mesh[producer_at].url).sender(address)
    net.wait(lambda: sender.credit > 0, 10, f"credit on {producer_at} for {address}")
    bodies = [f"{address} #{i}" for i in range(20)]
    outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], 15)
    assert [o.name for o in outcomes] == ["accepted"] * 20, (kind, producer_at, consumer_at)
    net.wait(lambda: len(receiver.received) == 20, 10, f"20 messages at {consumer_at}")
    assert receiver.bodies() == bodies


def multicast_copies(net: Net, mesh: MixedMesh, source: str, count: int) -> Dict[str, List[int]]:
    """A receiver on every router, ``count`` messages multicast from ``source``: how many
    copies of each message each receiver got."""
    address = f"multicast/from-{source}-{next(_addresses)}"
    clients = {n: net.connect(mesh[n].url) for n in mesh.names}
    receivers = {n: clients[n].receiver(address) for n in mesh.names}
    await_consumers(net, mesh, address, mesh.names)
    sender = clients[source].sender(address)
    net.wait(lambda: sender.credit > 0, 10, f"credit on {source}")
    bodies = [f"{source} #{i}" for i in range(count)]
    outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], 15)
    assert {o.name for o in outcomes} == {"accepted"}
    net.wait(lambda: all(set(r.bodies()) == set(bodies) for r in receivers.values()), 10,
             "every message at every receiver")
    net.pump(1.0)  # time for every further copy to arrive
    copies = {}
    for name, receiver in receivers.items():
        seen = Counter(receiver.bodies())
        copies[name] = [seen[b] for b in bodies]
    for client in clients.values():
        client.close()
    return copies


@pytest.mark.parametrize("source", NAMES)
def test_multicast_copies_as_in_the_all_c_mesh(meshes: Dict[str, MixedMesh], net: Net, source: str) -> None:
    """From each router, to a receiver on each: every receiver gets each message as many
    times in the mixed mesh as in the all-C one (ring: twice; full mesh: three times, the
    copies that went three hops being beyond radius 1 + 1); none lost."""
    mixed = multicast_copies(net, meshes["mixed"], source, 5)
    all_c = multicast_copies(net, meshes["all-c"], source, 5)
    assert mixed == all_c, f"mixed {mixed}, all-C {all_c}"
    assert all(min(counts) >= 1 for counts in mixed.values())


def path_table(mesh: MixedMesh, at: str) -> Dict[str, Tuple[object, object, frozenset]]:
    """Router ``at``'s view of every other router (router.node): next hop, cost, valid origins."""
    rows = query(mesh[at].url, NODE_TYPE, ["id", "nextHop", "cost", "validOrigins"])
    return {str(r["id"]): (r["nextHop"], r["cost"], frozenset(r["validOrigins"] or ()))
            for r in rows if str(r["id"]) != at}


def test_every_router_computes_the_paths_its_all_c_counterpart_does(meshes: Dict[str, MixedMesh]) -> None:
    """Each router's next hops, costs and valid origins (management's router.node) are those
    of the router with its id in the all-C mesh, whichever kind it is."""
    for name in NAMES:
        assert path_table(meshes["mixed"], name) == path_table(meshes["all-c"], name), name
