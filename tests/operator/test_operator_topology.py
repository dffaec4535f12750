"""Topologies: a full mesh, and the sparser redundant mesh that survives any one failure."""

from __future__ import annotations

from typing import List, Set, Tuple

import pytest

from qdmesh_operator.model import topology


def connected(nodes: Set[int], pairs: List[Tuple[int, int]]) -> bool:
    if not nodes:
        return True
    start = next(iter(nodes))
    seen = {start}
    todo = [start]
    while todo:
        n = todo.pop()
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                if x == n and y in nodes and y not in seen:
                    seen.add(y)
                    todo.append(y)
    return seen == nodes


def test_full_mesh_links_every_pair_once_from_the_later_router() -> None:
    pairs = topology.edges(topology.FULL_MESH, 5)
    assert len(pairs) == 10
    assert all(a > b for a, b in pairs)


@pytest.mark.parametrize(
    ("size", "degree"), [(s, d) for s in [*range(3, 17), 31] for d in (2, 3, 4) if d < s]
)
def test_redundant_mesh_survives_any_one_router_or_link(size: int, degree: int) -> None:
    pairs = topology.edges(topology.REDUNDANT, size, degree)
    nodes = set(range(size))
    assert all(a > b for a, b in pairs), "a router connects only to earlier routers"
    assert connected(nodes, pairs)
    for gone in range(size):
        assert connected(nodes - {gone}, [p for p in pairs if gone not in p]), f"router {gone} lost"
    for cut in pairs:
        assert connected(nodes, [p for p in pairs if p != cut]), f"link {cut} lost"
    assert len(pairs) < len(topology.edges(topology.FULL_MESH, size)) or size <= degree + 1


def test_redundant_mesh_is_sparse_for_large_meshes() -> None:
    pairs = topology.edges(topology.REDUNDANT, 64, 3)
    most = max(len(topology.neighbours(pairs, i)) for i in range(64))
    assert len(pairs) <= 2 * 64 and most <= 10


def test_scaling_up_never_changes_existing_routers_connectors() -> None:
    for kind in (topology.FULL_MESH, topology.REDUNDANT):
        small = topology.edges(kind, 6, 3)
        large = topology.edges(kind, 9, 3)
        assert set(small) <= set(large)
        assert {p for p in large if p[0] < 6} == set(small)
