"""qdmesh's path computation (protocol/paths.py) against qdrouterd 1.19's own (its PathEngine,
python/qpid_dispatch_internal/router/path.py, pure Python, loaded from where the C router's
build installs it or straight from its source archive): the same link states in, the same
next hops, costs, valid origins and radius out, on thousands of seeded topologies. In a mesh
of both kinds a router that broke an equal-cost tie differently would send balanced traffic
through a qdrouterd that releases it."""

from __future__ import annotations

import os
import random
import string
import tarfile
import types
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from qdrouter.protocol.paths import compute_paths
from tests.interop.shipped_configs import peers_folder
from tests.prerequisites import require

Collection = Dict[str, Dict[str, int]]
_MEMBER = "qpid-dispatch-1.19.0/python/qpid_dispatch_internal/router/path.py"


def _installed_path_py() -> Path | None:
    """Where .ci/setup.d/25-qdrouterd-c.sh (build-qdrouterd.sh) leaves the C router's Python."""
    prefix = Path(os.environ.get("QDR_PREFIX") or Path.home() / ".cache" / "qdr-1.19.0")
    found = prefix / "python" / "qpid_dispatch_internal" / "router" / "path.py"
    return found if found.is_file() else None


def _reference_source() -> str | None:
    installed = _installed_path_py()
    if installed is not None:
        return installed.read_text()
    peers = peers_folder()
    if peers is None:
        return None
    with tarfile.open(peers / "qpid-dispatch-1.19.0.tar.gz") as archive:
        member = archive.extractfile(_MEMBER)
        return member.read().decode() if member is not None else None


@pytest.fixture(scope="module")
def upstream() -> types.ModuleType:
    source = _reference_source()
    require(source is not None, "qdrouterd 1.19's path.py: the C router's build "
            "(bash .ci/setup.d/25-qdrouterd-c.sh) or its source archive in ../shared/peers "
            "(or set $QDMESH_PEERS)")
    assert source is not None
    module = types.ModuleType("upstream_path")
    exec(compile(source, _MEMBER, "exec"), module.__dict__)  # it imports nothing
    return module


class _LinkState:
    def __init__(self, peers: Dict[str, int]) -> None:
        self.peers = peers


class _Container:
    def __init__(self, my_id: str) -> None:
        self.id = my_id


def upstream_paths(module: types.ModuleType, my_id: str, collection: Collection) -> Tuple[Any, ...]:
    engine = module.PathEngine(_Container(my_id))
    return engine.calculate_routes({rid: _LinkState(peers) for rid, peers in collection.items()})


# -- topologies --------------------------------------------------------------------------------

def _ids(rnd: random.Random, n: int) -> List[str]:
    style = rnd.randrange(4)
    if style == 0:
        names = {f"R{i}" for i in range(n)}  # R10 sorts before R2
    elif style == 1:
        names = {"router-" + rnd.choice("abc") + str(rnd.randrange(1000)) for _ in range(n * 3)}
    elif style == 2:
        names = {"".join(rnd.choices(string.ascii_letters + string.digits + ".-_", k=rnd.randint(1, 6)))
                 for _ in range(n * 3)}
    else:
        names = {rnd.choice(["Q", "C", "q", "c"]) + str(rnd.randrange(100)) for _ in range(n * 3)}
    ordered = sorted(names)
    rnd.shuffle(ordered)
    while len(ordered) < n:
        ordered.append(f"extra{len(ordered)}")
    return ordered[:n]


def _edges(rnd: random.Random, shape: str, n: int) -> List[Tuple[int, int]]:
    if shape == "line":
        return [(i, i + 1) for i in range(n - 1)]
    if shape == "ring":
        return [(i, (i + 1) % n) for i in range(n)] if n > 2 else [(0, 1)]
    if shape == "full":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    if shape == "star":
        return [(0, i) for i in range(1, n)]
    if shape == "ring+chords":
        ring = [(i, (i + 1) % n) for i in range(n)]
        return ring + [tuple(rnd.sample(range(n), 2)) for _ in range(rnd.randint(1, n))]  # type: ignore[misc]
    p = rnd.uniform(0.15, 0.7)  # random graph, possibly disconnected
    return [(i, j) for i in range(n) for j in range(i + 1, n) if rnd.random() < p]


def topology(seed: int) -> Tuple[Collection, List[str]]:
    """A seeded collection, as a router holds it: its own link state first, then the others
    in the order it learned of them; costs symmetric or not, equal (many ties) or varied;
    sometimes a link state not yet arrived (no peers) or a peer never heard of at all."""
    rnd = random.Random(seed)
    shape = rnd.choice(["line", "ring", "full", "star", "ring+chords", "random"])
    n = rnd.randint(2, 6 if shape == "full" else 14)
    ids = _ids(rnd, n)
    max_cost = rnd.choice([1, 1, 2, 3, 10])
    symmetric = rnd.random() < 0.7
    ls: Collection = {rid: {} for rid in ids}
    for i, j in _edges(rnd, shape, n):
        if i == j:
            continue
        a, b = ids[i], ids[j]
        cost = rnd.randint(1, max_cost)
        ls[a][b] = cost
        ls[b][a] = cost if symmetric else rnd.randint(1, max_cost)
    order = list(ids)
    rnd.shuffle(order)
    if rnd.random() < 0.2:  # a link state not heard yet, or a one-sided report
        victim = rnd.choice(order[1:]) if n > 2 else order[-1]
        if rnd.random() < 0.5:
            ls[victim] = {}
        else:
            ls[victim].pop(next(iter(ls[victim]), ""), None)
    if rnd.random() < 0.1 and n > 2:  # a router named by others but absent from the collection
        gone = rnd.choice(order[1:])
        order.remove(gone)
    collection = {rid: ls[rid] for rid in order}
    return collection, order


def _compare(module: types.ModuleType, my_id: str, collection: Collection) -> None:
    next_hops, costs, valid_origins, radius = upstream_paths(module, my_id, collection)
    mine = compute_paths(my_id, collection)
    context = (my_id, collection)
    assert {d: r.next_hop for d, r in mine.routes.items()} == next_hops, context
    reachable_costs = {d: c for d, c in costs.items() if d in next_hops}
    assert {d: r.cost for d, r in mine.routes.items()} == reachable_costs, context
    assert mine.valid_origins == {d: frozenset(o) for d, o in valid_origins.items()}, context
    assert mine.radius == radius, context


def test_same_paths_as_qdrouterd_on_generated_topologies(upstream: types.ModuleType) -> None:
    views = 0
    for seed in range(3000):
        collection, order = topology(seed)
        views_here = [order[0]] if seed % 3 else order[:3]  # the collection's owner comes first
        for my_id in views_here:
            mine = {my_id: collection[my_id], **{k: v for k, v in collection.items() if k != my_id}}
            _compare(upstream, my_id, mine)
            views += 1
    assert views > 3000


def test_equal_cost_ring_of_four_ties_go_by_router_id(upstream: types.ModuleType) -> None:
    """The alternating mesh Q1-C2-Q3-C4-Q1: Q1 reaches Q3 through C2 (the lower id), and C4
    does not count Q1 as a valid origin toward Q3 (its balanced forwarder would release)."""
    ring = {"Q1": {"C2": 1, "C4": 1}, "C2": {"Q1": 1, "Q3": 1}, "Q3": {"C2": 1, "C4": 1},
            "C4": {"Q3": 1, "Q1": 1}}
    mine = compute_paths("Q1", ring)
    assert mine.routes["Q3"].next_hop == "C2" and mine.radius == 2
    c4 = compute_paths("C4", {"C4": ring["C4"], **{k: v for k, v in ring.items() if k != "C4"}})
    assert "Q1" not in c4.valid_origins["Q3"] and "Q3" not in c4.valid_origins["Q1"]
    for my_id in ring:
        _compare(upstream, my_id, {my_id: ring[my_id], **{k: v for k, v in ring.items() if k != my_id}})


def test_stand_in_link_state_for_a_peer_never_heard_of(upstream: types.ModuleType) -> None:
    """A peer named in a link state but absent from the collection: upstream stands in a
    link of cost 1 back to the first router naming it (the one direction it can route)."""
    collection = {"A": {"B": 5}, "B": {"A": 5, "X": 7}, "C": {"X": 2, "A": 1}}
    mine = compute_paths("A", collection)
    assert mine.routes["X"].cost == 12
    _compare(upstream, "A", collection)
