"""The operator managing an edge router through AMQP management, with a REAL router process
standing in for an edge pod (reached through QDMESH_ROUTER_URLS-style entries, as outside a
cluster): the group's addresses and VhostPolicies go live, drift is repaired, the uplink is
reported, and the edge connectors to the interior routers are made, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from qdmesh_operator.apply.edges import edge_routers, sync_edges
from qdmesh_operator.apply.management import ClientPool
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.model.routing import parse_vhost
from qdrouter.tools.management_client import ManagementClient
from tests.edge.edgeproc import edge as edge_router
from tests.operator.localmesh import LONG, names_on
from tests.router.fixtures import stop_checked
from tests.router.routerproc import Router

pytestmark = pytest.mark.timeout(120)

SPEC = {"size": 2, "image": "qdmesh/router:0.1.0", "addresses": [{"prefix": "queue/", "waypoint": True}],
        "edgeGroups": [{"name": "apps", "size": 1}]}


def managed(url: str, type_: str) -> list:
    """The operator's entities of ``type_`` (the router's config has others of its own)."""
    return [name for name in names_on(url, type_) if name.startswith("qdmesh/")]


def test_edge_router_gets_its_entities_live_and_drift_repaired(tmp_path: Path) -> None:
    # An edge router as the operator's edge pods run it: edge mode, the mesh's edge TLS profile.
    router = edge_router(tmp_path, "edge-stand-in", (), extra="sslProfile {\n    name: edge-tls\n}\n")
    router.start()
    try:
        _check_edge_sync(router)
    finally:
        stop_checked([router])


def _check_edge_sync(router: Router) -> None:
    vhost = parse_vhost("tenant", {"meshRef": "demo", "hostname": "tenant.example", "maxConnections": 5})
    state = mesh_state(parse_mesh("demo", "ns", SPEC), [vhost])
    routers = edge_routers(state, {}, False, {"ns/edge:apps:E1": router.url, "ns/demo-0": "amqp://x:1"})
    assert [(r.name, r.group) for r in routers] == [("E1", "apps")]
    pool = ClientPool()
    try:
        outcome = sync_edges(state, routers, pool, None)["E1"]
        assert outcome.reachable, outcome.error
        assert managed(router.url, "address") == ["qdmesh/address/prefix:queue/"]
        assert managed(router.url, "vhost") == ["qdmesh/vhost/tenant"]
        assert outcome.uplink == ""  # no interior router to reach outside a cluster
        connectors = managed(router.url, "connector")
        refused = [str(r.error) for r in outcome.failures]
        # Both uplinks are configured, in order (each edge group starts at another interior).
        assert connectors == ["qdmesh/edge/demo-0", "qdmesh/edge/demo-1"] and refused == [], refused

        with ManagementClient(router.url, timeout=5) as client:  # a hand-made change...
            client.delete(LONG["address"], name="qdmesh/address/prefix:queue/")
        again = sync_edges(state, routers, pool, None)["E1"]  # ...is put back
        assert [r.op.describe() for r in again.results if r.ok and r.op.type == "address"] == [
            "CREATE address 'qdmesh/address/prefix:queue/' (missing)"]
        assert managed(router.url, "address") == ["qdmesh/address/prefix:queue/"]
    finally:
        pool.close()
