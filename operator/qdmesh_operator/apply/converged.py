"""Whether a mesh has reconverged, from what its routers' management reported.  Pure: the
rolling restart and the mesh's status both ask it of the same outcomes."""

from __future__ import annotations

from typing import Mapping

from .. import contract
from ..model import topology
from ..model.mesh import MeshSpec
from .management import RouterOutcome


def mesh_converged(mesh: MeshSpec, outcomes: Mapping[str, RouterOutcome]) -> bool:
    """Every router answers, reaches every other router, and has every inter-router link the
    topology gives it.  Reaching all routers is not enough: a replaced router's links come
    back one connector retry at a time, and until they do its peers may be reached only
    through the next router to restart, which would cut the mesh when that one goes.  Routers
    of a linked mesh (MeshLink) that the routers also reach are not counted."""
    if len(outcomes) != mesh.size:
        return False
    ids = mesh.router_ids()
    pairs = topology.edges(mesh.topology, mesh.size, mesh.degree)
    for ordinal, rid in enumerate(ids):
        outcome = outcomes.get(rid)
        if outcome is None or not outcome.reachable:
            return False
        if sum(1 for n in outcome.nodes if not contract.is_foreign(mesh.name, n)) != mesh.size - 1:
            return False
        if not {ids[n] for n in topology.neighbours(pairs, ordinal)} <= set(outcome.direct_peers):
            return False
    return True
