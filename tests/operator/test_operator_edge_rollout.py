"""Edge groups' rollouts and maintenance windows, pure: a changed pod template outside every
window is applied but held (a Deployment paused, a DaemonSet OnDelete) until a window opens;
the same template rendered again is no change; a new group starts at once."""

from __future__ import annotations

import copy
from typing import Any, Dict

from qdmesh_operator.edge_rollout import gate
from qdmesh_operator.render.edges import edge_objects
from qdmesh_operator.rolling import PENDING_ANNOTATION, TEMPLATE_HASH
from tests.operator.specs import mesh

SPEC = {"size": 1, "image": "qdmesh/router:0.1.0",
        "edgeGroups": [{"name": "apps", "size": 2}, {"name": "nodes", "perNode": True}]}


def workloads(image: str = "qdmesh/router:0.1.0") -> Dict[str, Dict[str, Any]]:
    objects = edge_objects(mesh({**SPEC, "image": image}), None)
    return {o["kind"]: o for o in objects if o["kind"] in ("Deployment", "DaemonSet")}


def live_of(workload: Dict[str, Any]) -> Dict[str, Any]:
    """The workload as applied and read back."""
    return copy.deepcopy(workload)


def test_a_new_group_and_an_unchanged_template_are_not_held() -> None:
    for kind, workload in workloads().items():
        assert not gate(workload, None, window_open=False), kind
        again = workloads()[kind]
        assert not gate(again, live_of(workload), window_open=False), kind
        stamped = workload["metadata"]["annotations"][TEMPLATE_HASH]
        assert again["metadata"]["annotations"][TEMPLATE_HASH] == stamped
        assert PENDING_ANNOTATION not in again["metadata"]["annotations"]
        assert "paused" not in again["spec"]


def test_a_changed_template_waits_for_a_window_then_rolls_one_at_a_time() -> None:
    before = workloads()
    for workload in before.values():
        gate(workload, None, window_open=True)
    held = workloads("qdmesh/router:0.2.0")
    assert gate(held["Deployment"], live_of(before["Deployment"]), window_open=False)
    assert held["Deployment"]["spec"]["paused"] is True
    assert gate(held["DaemonSet"], live_of(before["DaemonSet"]), window_open=False)
    assert held["DaemonSet"]["spec"]["updateStrategy"] == {"type": "OnDelete"}
    for workload in held.values():
        assert workload["metadata"]["annotations"][PENDING_ANNOTATION] == "true"
        # The new template is what is stored: it is what rolls out later.
        assert workload["spec"]["template"]["spec"]["containers"][0]["image"] == "qdmesh/router:0.2.0"
    # Still outside a window, rendered again: still held (the live workload says it waits).
    again = workloads("qdmesh/router:0.2.0")
    assert gate(again["Deployment"], live_of(held["Deployment"]), window_open=False)
    # A window: released, with the one-at-a-time strategy.
    released = workloads("qdmesh/router:0.2.0")
    assert not gate(released["Deployment"], live_of(held["Deployment"]), window_open=True)
    assert not gate(released["DaemonSet"], live_of(held["DaemonSet"]), window_open=True)
    assert "paused" not in released["Deployment"]["spec"]
    assert released["Deployment"]["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    assert released["DaemonSet"]["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    assert all(PENDING_ANNOTATION not in w["metadata"]["annotations"] for w in released.values())
