"""When the operator calls a mesh converged (MeshConverged, and the gate of rolling restarts),
read from REAL router processes: every router must reach every other router over the links
the topology gives it, not merely through some other router."""

from __future__ import annotations

import pytest

from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.reconcile import mesh_converged
from tests.mesh.conftest import MeshFactory
from tests.operator.localmesh import local_state, sync

pytestmark = pytest.mark.timeout(120)

FULL_MESH_OF_3 = {"size": 3, "image": "qdmesh/router:0.1.0"}


def test_a_full_mesh_with_a_link_missing_is_not_converged(mesh_factory: MeshFactory) -> None:
    # demo-2's link to demo-0 is missing (as while a replaced router's connector backs off):
    # every router still reaches both others, through demo-1.
    local = mesh_factory([("demo-1", "demo-0", 1), ("demo-2", "demo-1", 1)])
    mesh = parse_mesh("demo", "ns", FULL_MESH_OF_3)
    outcomes = sync(local_state(mesh, []), local)
    assert all(int(o.router.get("nodeCount") or 0) == 2 for o in outcomes.values())
    assert outcomes["demo-0"].direct_peers == ["demo-1"]
    assert outcomes["demo-2"].direct_peers == ["demo-1"]
    assert not mesh_converged(mesh, outcomes)


def test_a_full_mesh_with_every_link_is_converged(mesh_factory: MeshFactory) -> None:
    local = mesh_factory([("demo-1", "demo-0", 1), ("demo-2", "demo-0", 1), ("demo-2", "demo-1", 1)])
    mesh = parse_mesh("demo", "ns", FULL_MESH_OF_3)
    outcomes = sync(local_state(mesh, []), local)
    assert outcomes["demo-1"].direct_peers == ["demo-0", "demo-2"]
    assert mesh_converged(mesh, outcomes)
    # A mesh of 4 is not converged with only 3 routers answering.
    assert not mesh_converged(parse_mesh("demo", "ns", {**FULL_MESH_OF_3, "size": 4}), outcomes)
