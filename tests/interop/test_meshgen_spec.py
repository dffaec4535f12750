"""The mesh generator (tests/interop/meshgen.py) itself, without starting a router: a seed
always gives the same mesh, every mesh is connected, mixes both kinds and stays within its
ranges, its all-C twin differs only in kinds, and a kill plan's victim lies on a cheapest
path between the producer's and the consumer's routers when the shape has such a router."""

from __future__ import annotations

from typing import Dict, Set

import pytest

from tests.interop.meshgen import SHAPES, C, MeshSpec, generate
from tests.interop.meshgen_traffic import plan_for
from tests.mesh.meshproc import shortest_paths

SEEDS = range(300)


def _links(spec: MeshSpec) -> list:
    return [(lk.connector, lk.listener, lk.cost) for lk in spec.links]


def _reachable(spec: MeshSpec, start: str) -> Set[str]:
    return {start} | set(shortest_paths(spec.interiors, _links(spec), start))


def test_a_seed_always_gives_the_same_mesh_and_plan() -> None:
    for seed in (0, 7, 1234):
        assert generate(seed) == generate(seed)
        assert plan_for(generate(seed), True) == plan_for(generate(seed), True)
    assert len({generate(seed) for seed in SEEDS}) == len(SEEDS)


@pytest.mark.parametrize("seed", SEEDS[:100])
def test_every_mesh_is_connected_mixed_and_within_its_ranges(seed: int) -> None:
    spec = generate(seed)
    interiors = spec.interiors
    assert 3 <= len(interiors) <= 8 and len(spec.edges) <= 2
    assert spec.shape in SHAPES
    assert _reachable(spec, interiors[0]) == set(interiors), spec.describe()
    assert {spec.router(n).kind for n in interiors} == {"qdmesh", C}
    assert len(set(spec.names)) == len(spec.names)
    order = {n: i for i, n in enumerate(interiors)}
    for link in spec.links:   # a connector's listener is up before it: started earlier
        assert order[link.listener] < order[link.connector] and 1 <= link.cost <= 4
    for r in spec.routers:
        assert r.hello in (1, 2) and 3 * r.hello <= r.max_age <= 5 * r.hello and 2 <= r.ra_flux <= 4
        assert (r.mode == "edge") == (r.uplink in interiors)


def test_the_all_c_twin_differs_only_in_kinds() -> None:
    for seed in SEEDS[:50]:
        spec = generate(seed)
        twin = spec.all_c()
        assert {r.kind for r in twin.routers} == {C}
        assert twin.links == spec.links and twin.names == spec.names and twin.shape == spec.shape
        assert [(r.hello, r.max_age, r.ra_flux, r.uplink) for r in twin.routers] == \
            [(r.hello, r.max_age, r.ra_flux, r.uplink) for r in spec.routers]


def test_every_shape_and_edge_routers_of_both_kinds_occur() -> None:
    shapes: Dict[str, int] = {}
    edge_kinds = set()
    for seed in SEEDS:
        spec = generate(seed)
        shapes[spec.shape] = shapes.get(spec.shape, 0) + 1
        edge_kinds |= {(spec.router(e).kind, spec.router(spec.interior_of(e)).kind) for e in spec.edges}
    assert set(shapes) == set(SHAPES)
    assert edge_kinds == {("qdmesh", "qdmesh"), ("qdmesh", C), (C, "qdmesh"), (C, C)}


@pytest.mark.parametrize("seed", SEEDS[:100])
def test_the_killed_router_is_on_a_cheapest_path_when_one_can_be(seed: int) -> None:
    spec = generate(seed)
    assert plan_for(spec).kill is None
    kill = plan_for(spec, True).kill
    assert kill is not None
    producer, consumer, victim = kill
    ends = {spec.interior_of(producer), spec.interior_of(consumer)}
    assert victim in spec.interiors and victim not in ends
    if spec.shape in ("line", "star"):   # some pair's cheapest path crosses a third router
        _, hops = shortest_paths(spec.interiors, _links(spec), spec.interior_of(producer))[
            spec.interior_of(consumer)]
        assert victim in hops, spec.describe()
