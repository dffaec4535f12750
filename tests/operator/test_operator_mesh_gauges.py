"""The operator's gauges of what each mesh's status says (mesh_gauges.py), which the chart's
alert rules read: one series per fact, label values escaped, a mesh's series gone with it."""

from __future__ import annotations

from typing import Any, Dict

from qdmesh_operator.mesh_gauges import MeshGauges
from tests.prerequisites import require

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


def test_each_canary_pair_has_a_histogram_of_its_round_trips_counted_once() -> None:
    import shutil
    import subprocess

    from qdmesh_operator.canary import PairResult

    gauges = MeshGauges()
    pair = 'namespace="messaging",mesh="demo",source="demo-0",destination="demo-1"'
    first = {("demo-0", "demo-1"): PairResult(0.003, "", 100.0),
             ("demo-1", "demo-0"): PairResult(None, "lost", 100.0)}
    gauges.observe("messaging", "demo", STATUSES, first)
    gauges.observe("messaging", "demo", STATUSES, first)  # the same probe again: not counted twice
    gauges.observe("messaging", "demo", STATUSES, {**first, ("demo-0", "demo-1"): PairResult(0.2, "", 130.0)})
    lines = gauges.render().splitlines()
    for expected in [f'qdmesh_canary_pair_round_trip_seconds_bucket{{{pair},le="0.0025"}} 0',
                     f'qdmesh_canary_pair_round_trip_seconds_bucket{{{pair},le="0.005"}} 1',
                     f'qdmesh_canary_pair_round_trip_seconds_bucket{{{pair},le="0.25"}} 2',
                     f'qdmesh_canary_pair_round_trip_seconds_bucket{{{pair},le="+Inf"}} 2',
                     f"qdmesh_canary_pair_round_trip_seconds_count{{{pair}}} 2"]:
        assert expected in lines, expected
    # A pair whose probes all failed has no histogram (its reachability says so).
    assert not [line for line in lines if 'source="demo-1"' in line and "round_trip_seconds_" in line]
    # Prometheus's own parser and linter reads the exposition.
    promtool = shutil.which("promtool")
    require(promtool is not None, "promtool (.ci/setup.d/32-promtool.sh)")
    checked = subprocess.run([str(promtool), "check", "metrics"], input=gauges.render(), text=True,
                             capture_output=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # A pair that leaves the results goes, and the mesh's with the mesh.
    gauges.observe("messaging", "demo", STATUSES, {})
    assert "qdmesh_canary_pair_round_trip_seconds_bucket" not in gauges.render()
    gauges.observe("messaging", "demo", STATUSES, first)
    gauges.forget("messaging", "demo")
    assert "qdmesh_canary_pair_round_trip_seconds_bucket" not in gauges.render()
