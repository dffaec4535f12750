"""The operator's gauges of what each mesh's status says (mesh_gauges.py), which the chart's
alert rules read: one series per fact, label values escaped, a mesh's series gone with it."""

from __future__ import annotations

from typing import Any, Dict

from qdmesh_operator.mesh_gauges import MeshGauges

STATUSES: Dict[Any, Dict[str, Any]] = {
    ("routermeshes", "demo"): {
        "routers": 3, "readyRouters": 2,
        "lostRouters": [{"name": "demo-2", "reason": "NodeNotReady"}],
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "MeshConverged", "status": "True"}],
        "routerStatus": [{"name": "demo-0", "ready": True, "peers": 2},
                         {"name": "demo-2", "ready": False, "message": "lost: its node is not ready"}],
        "certificates": [{"secret": "demo-inter-router-tls", "notAfter": "2027-01-01T00:00:00Z"}]},
    ("linkroutes", "orders"): {"conditions": [{"type": "Reachable", "status": "False"}]},
    ("autolinks", "q1"): {"conditions": [{"type": "Reachable", "status": "Unknown"}]},
    ("vhostpolicies", "tenant"): {"conditions": [{"type": "Ready", "status": "True"}]},
}


def test_each_fact_of_the_status_is_a_series() -> None:
    gauges = MeshGauges()
    gauges.observe("messaging", "demo", STATUSES)
    lines = set(gauges.render().splitlines())
    mesh = 'namespace="messaging",mesh="demo"'
    for expected in [f"qdmesh_mesh_ready{{{mesh}}} 0", f"qdmesh_mesh_converged{{{mesh}}} 1",
                     f"qdmesh_mesh_routers{{{mesh}}} 3", f"qdmesh_mesh_ready_routers{{{mesh}}} 2",
                     f"qdmesh_mesh_lost_routers{{{mesh}}} 1",
                     f'qdmesh_router_ready{{{mesh},router="demo-0"}} 1',
                     f'qdmesh_router_management_answers{{{mesh},router="demo-0"}} 1',
                     f'qdmesh_router_management_answers{{{mesh},router="demo-2"}} 0',
                     f'qdmesh_route_reachable{{{mesh},kind="LinkRoute",name="orders"}} 0',
                     f'qdmesh_certificate_expiry_timestamp_seconds{{{mesh},secret="demo-inter-router-tls"}} '
                     "1798761600"]:
        assert expected in lines, expected
    # Unknown is no answer: no series rather than a false 0.
    assert not [line for line in lines if 'name="q1"' in line]
    assert "# TYPE qdmesh_route_reachable gauge" in lines


def test_a_reconciliation_without_statuses_keeps_the_last_and_a_mesh_gone_takes_its_series() -> None:
    gauges = MeshGauges()
    gauges.observe("messaging", "demo", STATUSES)
    gauges.observe("messaging", "demo", {})  # a request served by another reconciliation
    assert 'mesh="demo"' in gauges.render()
    gauges.observe("messaging", 'odd"name', {("routermeshes", 'odd"name'): {"routers": 1}})
    assert 'qdmesh_mesh_routers{namespace="messaging",mesh="odd\\"name"} 1' in gauges.render()
    gauges.forget("messaging", "demo")
    gauges.forget("messaging", 'odd"name')
    assert 'mesh="' not in gauges.render() and gauges.meshes() == 0
