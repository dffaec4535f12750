"""Pointing the operator's planner and applier at real local router processes.

The operator addresses routers by their ids (``demo-0``...); a local mesh (tests/mesh/meshproc)
has its own router ids and its own inter-router wiring, so the desired state is mapped onto it:
router ``demo-i`` is the i-th local router, and the Kubernetes inter-router connectors (to DNS
names that exist only in a cluster) are left out."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from qdmesh_operator.apply.management import RouterOutcome, sync_mesh
from qdmesh_operator.desired.state import MeshState, mesh_state
from qdmesh_operator.model.mesh import MeshSpec
from qdmesh_operator.model.routing import RoutingSpec
from qdrouter.tools.management_client import ManagementClient
from tests.mesh.meshproc import Mesh

LONG = {
    "linkRoute": "org.apache.qpid.dispatch.router.config.linkRoute",
    "autoLink": "org.apache.qpid.dispatch.router.config.autoLink",
    "address": "org.apache.qpid.dispatch.router.config.address",
    "connector": "org.apache.qpid.dispatch.connector",
    "listener": "org.apache.qpid.dispatch.listener",
    "vhost": "org.apache.qpid.dispatch.vhost",
}


def local_state(mesh: MeshSpec, routing: Sequence[RoutingSpec]) -> MeshState:
    state = mesh_state(mesh, routing)
    state.entities = {
        rid: [e for e in entities if not e.name.startswith("qdmesh/interRouter/")]
        for rid, entities in state.entities.items()
    }
    return state


def urls(local: Mesh) -> Dict[str, str]:
    return {f"demo-{i}": local.routers[name].url for i, name in enumerate(sorted(local.routers))}


def sync(state: MeshState, local: Mesh) -> Dict[str, RouterOutcome]:
    outcomes = sync_mesh(state, urls(local))
    assert set(outcomes) == set(urls(local))
    return outcomes


def names_on(url: str, type_: str) -> List[str]:
    """Entity names of ``type_`` on the router at ``url``, read independently of the operator."""
    with ManagementClient(url, timeout=5) as client:
        return sorted(str(r["name"]) for r in client.query(LONG[type_]))


def rows_on(url: str, type_: str) -> Dict[str, Mapping[str, Any]]:
    with ManagementClient(url, timeout=5) as client:
        return {str(r["name"]): r for r in client.query(LONG[type_])}
