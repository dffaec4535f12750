"""Whether traffic can reach a LinkRoute's or an AutoLink's destination (status/reachable.py):
the ``Reachable`` condition from each router's ``operStatus``, and the RouterMesh's count of
reachable link routes and auto-links.  Against a real API server and real routers:
tests/operator/test_operator_kube.py."""

from __future__ import annotations

from typing import Any, Dict, List

from qdmesh_operator.status.reachable import reachable_condition, summary

BROKER = {"meshRef": "m", "prefix": "orders.", "connection": "broker"}


def reachable(kind: str, spec: Dict[str, Any], routers: List[Dict[str, Any]]) -> Dict[str, Any]:
    return reachable_condition(kind, spec, routers, generation=3, previous=[])


def test_a_link_route_is_reachable_once_any_router_is_connected_to_its_destination() -> None:
    found = reachable("LinkRoute", BROKER, [{"name": "m-0", "operStatus": "inactive"},
                                            {"name": "m-1", "operStatus": "active"}])
    assert (found["status"], found["reason"]) == ("True", "RouteContainerConnected")
    assert found["message"] == "connector 'broker' connected to m-1: reachable from every router of the mesh"
    assert found["observedGeneration"] == 3


def test_a_link_route_nobody_is_connected_to_says_what_is_missing() -> None:
    spec = {"meshRef": "m", "prefix": "orders.", "containerId": "amq"}
    found = reachable("LinkRoute", spec, [{"name": "m-0", "operStatus": "inactive"}])
    assert (found["status"], found["reason"]) == ("False", "NoRouteContainer")
    assert found["message"] == "no router of the mesh is connected to container 'amq'"


def test_an_auto_link_is_reachable_only_when_active_on_every_router() -> None:
    spec = {"meshRef": "m", "address": "q1", "direction": "out", "connection": "broker"}
    routers = [{"name": "m-0", "operStatus": "active"},
               {"name": "m-1", "operStatus": "failed", "lastError": "amqp:not-found: no queue q1"},
               {"name": "m-2", "operStatus": "inactive"}]
    found = reachable("AutoLink", spec, routers)
    assert (found["status"], found["reason"]) == ("False", "AutoLinkInactive")
    assert found["message"] == ("active on 1/3 routers; m-1: failed (amqp:not-found: no queue q1); "
                                "m-2: inactive (not connected to connector 'broker')")
    every = [{"name": f"m-{i}", "operStatus": "active"} for i in range(3)]
    assert reachable("AutoLink", spec, every)["status"] == "True"


def test_routers_that_do_not_answer_leave_it_unknown() -> None:
    away = {"name": "m-0", "applied": False, "message": "router not reachable"}
    found = reachable("AutoLink", BROKER, [away])
    assert (found["status"], found["reason"]) == ("Unknown", "RoutersNotAnswering")


def test_the_mesh_counts_what_traffic_can_reach() -> None:
    yes = {"conditions": [{"type": "Reachable", "status": "True"}]}
    no = {"conditions": [{"type": "Reachable", "status": "False"}]}
    assert summary([yes, no, {"conditions": []}]) == "1/3"
