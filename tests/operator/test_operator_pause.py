"""The status of a paused RouterMesh (qdmesh.io/pause-reconciliation): everything as the last
applied spec left it, ReconciliationPaused=True beside it, announced once; its routing
resources paused with it; the resumption announced.  Pure (status/paused.py)."""

from __future__ import annotations

from typing import Any, Dict

from qdmesh_operator.operations import PAUSE_ANNOTATION, paused
from qdmesh_operator.status.paused import RECONCILIATION_PAUSED, paused_report, resumed_event

READY = {"type": "Ready", "status": "True", "reason": "Applied", "message": "3 routers ready",
         "lastTransitionTime": "2026-11-01T00:00:00Z", "observedGeneration": 4}


def _mesh(status: Dict[str, Any] | None = None, generation: int = 5,
          annotation: str = "true") -> Dict[str, Any]:
    return {"apiVersion": "qdmesh.io/v1alpha1", "kind": "RouterMesh",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u", "generation": generation,
                         "annotations": {PAUSE_ANNOTATION: annotation}},
            "status": status if status is not None else {"observedGeneration": 4, "conditions": [READY],
                                                         "readyRouters": 3, "routerImage": "r:1"}}


def test_only_true_pauses() -> None:
    assert paused(_mesh()) and paused(_mesh(annotation="True"))
    assert not paused(_mesh(annotation="false")) and not paused({"metadata": {}})


def test_paused_status_keeps_the_last_applied_generation_and_ready() -> None:
    report = paused_report(_mesh(), [])
    status = report.statuses[("routermeshes", "m")]
    assert status["observedGeneration"] == 4  # the spec of generation 5 is not applied
    assert status["readyRouters"] == 3 and status["routerImage"] == "r:1"
    ready, pause = status["conditions"]
    assert ready == READY
    assert (pause["type"], pause["status"]) == (RECONCILIATION_PAUSED, "True")
    assert PAUSE_ANNOTATION in pause["message"]
    (event,) = report.events
    assert (event.type, event.reason) == ("Normal", RECONCILIATION_PAUSED)


def test_pause_is_announced_once_and_keeps_its_transition_time() -> None:
    first = paused_report(_mesh(), []).statuses[("routermeshes", "m")]
    again = paused_report(_mesh(first), [])
    assert again.events == []
    assert again.statuses[("routermeshes", "m")] == first


def test_routing_resources_are_paused_with_their_mesh() -> None:
    link_route = {"metadata": {"name": "orders"}, "status": {"observedGeneration": 2, "conditions": []}}
    status = paused_report(_mesh(), [("linkroutes", link_route)]).statuses[("linkroutes", "orders")]
    assert status["observedGeneration"] == 2
    (pause,) = status["conditions"]
    assert pause["type"] == RECONCILIATION_PAUSED and "RouterMesh m is paused" in pause["message"]


def test_a_new_mesh_paused_before_its_first_status() -> None:
    status = paused_report(_mesh({}), []).statuses[("routermeshes", "m")]
    assert status["observedGeneration"] == 0
    assert [c["type"] for c in status["conditions"]] == [RECONCILIATION_PAUSED]


def test_resumption_is_announced_only_after_a_pause() -> None:
    paused_status = paused_report(_mesh(), []).statuses[("routermeshes", "m")]
    event = resumed_event(_mesh(paused_status, annotation=""))
    assert event is not None and event.reason == "ReconciliationResumed"
    assert resumed_event(_mesh(annotation="")) is None
