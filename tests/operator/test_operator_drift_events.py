"""What the operator says about the changes it makes on routers: an entity deleted by hand and
put back is drift (a Warning, DriftRepaired), whichever reconciliation found it; a change the
user asked for is a live change (Normal, Applied)."""

from __future__ import annotations

from typing import Any, Dict

from qdmesh_operator.apply.management import OpResult, RouterOutcome
from qdmesh_operator.apply.plan import Op
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.model.routing import parse_auto_link
from qdmesh_operator.status import drift
from qdmesh_operator.status.mesh import count, management_events
from qdmesh_operator.status.report import Report

BODY: Dict[str, Any] = {"apiVersion": "qdmesh.io/v1alpha1", "kind": "RouterMesh",
                        "metadata": {"name": "m", "namespace": "ns", "uid": "u"}}
MESH = parse_mesh("m", "ns", {"size": 2, "connectors": [{"name": "broker", "host": "b", "port": 5672}]})
Q1 = parse_auto_link("q1", {"meshRef": "m", "address": "q1", "direction": "out", "connection": "broker"})


def _created(router_id: str) -> RouterOutcome:
    op = Op("CREATE", "autoLink", "qdmesh/autoLink/q1")
    return RouterOutcome(router_id, f"amqp://{router_id}", results=[OpResult(op)])


def test_a_router_left_in_sync_with_the_same_entities_repairs_drift() -> None:
    state = mesh_state(MESH, [Q1])
    in_sync = drift.in_sync(state, {"m-0": RouterOutcome("m-0", "u0"), "m-1": RouterOutcome("m-1", "u1")})
    assert set(in_sync) == {"m-0", "m-1"}
    assert drift.unchanged_since(in_sync, mesh_state(MESH, [Q1])) == {"m-0", "m-1"}
    # Something asked for since (a new AutoLink): the changes on those routers are live changes.
    q2 = parse_auto_link("q2", {"meshRef": "m", "address": "q2", "direction": "in", "connection": "broker"})
    assert drift.unchanged_since(in_sync, mesh_state(MESH, [Q1, q2])) == frozenset()


def test_a_router_not_in_sync_last_time_is_not_drift() -> None:
    state = mesh_state(MESH, [Q1])
    unreachable = RouterOutcome("m-1", "u1", error="connection refused")
    failed = RouterOutcome("m-0", "u0", results=[OpResult(Op("CREATE", "autoLink", "x"), "refused (400)")])
    assert drift.in_sync(state, {"m-0": failed, "m-1": unreachable}) == {}


def test_drift_and_asked_for_changes_get_an_event_each() -> None:
    report = Report()
    outcomes = {"m-0": _created("m-0"), "m-1": _created("m-1")}
    count(report, outcomes, frozenset({"m-0"}))
    management_events(report, BODY, outcomes, frozenset({"m-0"}))
    assert (report.operations, report.repaired) == (2, 1)
    kinds = [(e.type, e.reason) for e in report.events]
    assert kinds == [("Warning", "DriftRepaired"), ("Normal", "Applied")]
    assert report.events[0].message == ("1 operations on 1 routers put back what had changed by hand: "
                                        "CREATE autoLink 'qdmesh/autoLink/q1'")
    assert report.events[1].message == "1 live changes (1 created) on 1 routers, no restart"
