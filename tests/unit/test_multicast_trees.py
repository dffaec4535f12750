"""Multicast trees (protocol/multicast_trees.py): exactly one copy on small and random
topologies, and timing on large ones."""

from __future__ import annotations

import random
import time
from typing import Dict, FrozenSet, List, Mapping, Tuple

from qdrouter.protocol.multicast_trees import (
    _shortest_tree,
    build_graph,
    compute_routes,
    compute_valid_origins,
)

LS = Dict[str, Dict[str, int]]


def links(*edges: Tuple[str, str, int]) -> LS:
    ls: LS = {}
    for a, b, cost in edges:
        ls.setdefault(a, {})[b] = cost
        ls.setdefault(b, {})[a] = cost
    return ls


def ring(n: int, chord: Tuple[str, str] = ()) -> LS:  # type: ignore[assignment]
    names = [f"R{i}" for i in range(n)]
    edges = [(names[i], names[(i + 1) % n], 1) for i in range(n)]
    if chord:
        edges.append((chord[0], chord[1], 1))
    return links(*edges)


def table(my: str, ls: LS) -> Dict[str, Tuple[str, int]]:
    return {d: (r.next_hop, r.cost) for d, r in compute_routes(my, build_graph(ls)).items()}


def test_line_of_three() -> None:
    ls = links(("A", "B", 1), ("B", "C", 2))
    assert table("A", ls) == {"B": ("B", 1), "C": ("B", 3)}
    assert table("B", ls) == {"A": ("A", 1), "C": ("C", 2)}


def test_ring_of_five_with_chord() -> None:
    ls = ring(5, ("R0", "R2"))
    t = table("R0", ls)
    assert t["R1"] == ("R1", 1) and t["R2"] == ("R2", 1) and t["R4"] == ("R4", 1)
    # R3 is two hops either way (via R2 or R4): a deterministic choice, the same every time.
    assert t["R3"][1] == 2 and t["R3"][0] in ("R2", "R4")
    assert all(table("R0", ring(5, ("R0", "R2")))["R3"] == t["R3"] for _ in range(3))


def test_full_mesh_of_four() -> None:
    names = ["A", "B", "C", "D"]
    ls = links(*[(a, b, 1) for i, a in enumerate(names) for b in names[i + 1:]])
    assert table("A", ls) == {n: (n, 1) for n in "BCD"}


def test_unidirectional_links_are_ignored() -> None:
    ls = links(("A", "B", 1), ("B", "C", 1))
    ls["A"]["C"] = 1  # A claims C, but C (whose link state we hold) does not list A
    assert table("A", ls)["C"] == ("B", 2)


def test_unknown_peer_is_reachable_provisionally() -> None:
    # B listed C but C's link state is unknown yet: usable so that an LSR can reach C.
    ls = links(("A", "B", 1))
    ls["B"]["C"] = 4
    assert table("A", ls)["C"] == ("B", 5)


def test_unreachable_routers_are_absent() -> None:
    ls = links(("A", "B", 1), ("C", "D", 1))
    assert table("A", ls) == {"B": ("B", 1)}
    assert table("Z", ls) == {}


def test_costs_prefer_cheaper_longer_path() -> None:
    ls = links(("A", "B", 10), ("A", "C", 1), ("C", "B", 1))
    assert table("A", ls)["B"] == ("C", 2)


def simulate_multicast(ls: LS, origin: str) -> Dict[str, int]:
    """Forward one multicast copy per the computed tables; count copies per router."""
    graph = build_graph(ls)
    routes = {r: compute_routes(r, graph) for r in ls}
    vo: Dict[str, Dict[str, FrozenSet[str]]] = {r: compute_valid_origins(r, graph, routes[r]) for r in ls}
    received = {r: 0 for r in ls}
    queue: List[str] = [origin]
    while queue:
        here = queue.pop()
        hops = set()
        for dest, route in routes[here].items():
            if here == origin or origin in vo[here][dest]:
                hops.add(route.next_hop)
        for hop in hops:
            received[hop] += 1
            queue.append(hop)
    return received


def test_valid_origins_give_exactly_one_copy_on_ring_with_chord() -> None:
    for ls in (ring(5), ring(5, ("R0", "R2")), ring(6), ring(6, ("R1", "R4"))):
        for origin in ls:
            received = simulate_multicast(ls, origin)
            assert received.pop(origin) == 0
            assert set(received.values()) == {1}, (origin, received)


def random_topology(n: int, seed: int, extra: float = 1.0, unit: bool = False) -> LS:
    rnd = random.Random(seed)
    names = [f"R{i:04d}" for i in range(n)]
    ls: LS = {name: {} for name in names}
    pairs = [(names[i], names[(i + 1) % n]) for i in range(n)]
    pairs += [tuple(rnd.sample(names, 2)) for _ in range(int(n * extra))]  # type: ignore[misc]
    for a, b in pairs:
        cost = 1 if unit else rnd.randint(1, 10)
        ls[a][b] = cost
        ls[b][a] = cost
    return ls


def brute_force_valid_origins(my: str, ls: Mapping[str, Mapping[str, int]]) -> Dict[str, FrozenSet[str]]:
    """Upstream's definition literally: one tree per origin, walk each path back to the root."""
    graph = build_graph(ls)
    routes = compute_routes(my, graph)
    me = graph.index[my]
    result: Dict[str, set] = {d: set() for d in routes}
    for origin in routes:
        root = graph.index[origin]
        _, parent, order = _shortest_tree(graph.adj, root)
        for v in order[1:]:
            x = parent[v]
            while x not in (root, me):
                x = parent[x]
            if x == me and v != me:
                result[graph.ids[v]].add(origin)
    return {d: frozenset(s) for d, s in result.items()}


def test_valid_origins_match_the_upstream_definition() -> None:
    for seed in range(20):
        ls = random_topology(random.Random(seed).randint(3, 30), seed, extra=1.5, unit=bool(seed % 2))
        graph = build_graph(ls)
        for my in sorted(ls)[:4]:
            assert compute_valid_origins(my, graph) == brute_force_valid_origins(my, ls)


def test_multicast_exactly_once_on_random_meshes() -> None:
    for seed in range(5):
        ls = random_topology(25, seed, extra=1.0, unit=True)  # unit costs: many equal-cost ties
        for origin in sorted(ls)[:5]:
            received = simulate_multicast(ls, origin)
            received.pop(origin)
            assert set(received.values()) == {1}


def test_route_computation_time(capsys: object) -> None:
    lines = []
    for n in (100, 1000):
        ls = random_topology(n, 1)
        # CPU time, not wall time: what the computation costs, whatever else the machine runs
        # (other test workers included).
        start = time.process_time()
        graph = build_graph(ls)
        routes = compute_routes("R0000", graph)
        mid = time.process_time()
        vo = compute_valid_origins("R0000", graph, routes)
        end = time.process_time()
        assert len(routes) == n - 1 and len(vo) == n - 1
        lines.append(f"{n} routers, {sum(map(len, ls.values())) // 2} links: graph+routes "
                     f"{(mid - start) * 1e3:.1f} ms, valid origins {(end - mid) * 1e3:.1f} ms")
        if n == 1000:
            assert mid - start < 0.25  # the next-hop table is what a topology change waits for
    print("\n" + "\n".join(lines))
