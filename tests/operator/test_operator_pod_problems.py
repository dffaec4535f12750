"""Routers that do not become ready, and why, as their pods say (pod_problems.py,
status/pods.py): an image that cannot be pulled, a crash loop with how its last run ended, a
pod nobody can schedule.  The RouterMesh's status names the reason and the pods' own message;
``Stalled`` when waiting will not help; a Warning Event once per problem, not at each drift
check.  Then the same against a REAL API server, the test playing the kubelet (pod status
through its subresource)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
from kubernetes.client import (
    V1ContainerState,
    V1ContainerStateTerminated,
    V1ContainerStateWaiting,
    V1ContainerStatus,
    V1Pod,
    V1PodCondition,
    V1PodStatus,
)

from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.pod_problems import PodProblem, pod_problem
from qdmesh_operator.reconcile import MeshReconciler, Report
from qdmesh_operator.status.pods import pod_events, pods_verdict
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace, eventually
from tests.operator.test_operator_lost_routers import Stage

pytestmark = pytest.mark.timeout(180)

PULL = "rpc error: code = NotFound desc = failed to pull and unpack image \"qdmesh/router:9.9\": not found"


def waiting(reason: str, message: str = "", last_exit: V1ContainerStateTerminated | None = None) -> V1Pod:
    state = V1ContainerState(waiting=V1ContainerStateWaiting(reason=reason, message=message))
    last = V1ContainerState(terminated=last_exit) if last_exit else None
    return V1Pod(status=V1PodStatus(container_statuses=[V1ContainerStatus(
        name="router", image="qdmesh/router:9.9", image_id="", ready=False, restart_count=3,
        state=state, last_state=last)]))


def test_what_a_pod_says_keeps_it_from_running() -> None:
    problem = pod_problem(waiting("ErrImagePull", PULL))
    # The kubelet alternates ErrImagePull and ImagePullBackOff: one problem, one name.
    assert problem == PodProblem("ImagePullBackOff", f"container router: {PULL}") and problem.stalled
    assert pod_problem(waiting("ImagePullBackOff", 'Back-off pulling image "qdmesh/router:9.9"')).reason == \
        "ImagePullBackOff"
    crash = pod_problem(waiting("CrashLoopBackOff", "back-off 40s restarting failed container", last_exit=(
        V1ContainerStateTerminated(exit_code=1, reason="Error", message="qdrouterd: bad config\n"))))
    assert crash == PodProblem("CrashLoopBackOff", "container router: last exit: Error (exit code 1): "
                                                   "qdrouterd: bad config")
    unschedulable = pod_problem(V1Pod(status=V1PodStatus(conditions=[V1PodCondition(
        type="PodScheduled", status="False", reason="Unschedulable",
        message="0/3 nodes are available: 3 Insufficient cpu.")])))
    assert unschedulable == PodProblem("Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")
    assert not unschedulable.stalled, "a node may yet free up or be added"
    # Starting normally: nothing to say.
    assert pod_problem(waiting("ContainerCreating")) is None
    assert pod_problem(V1Pod(status=V1PodStatus(phase="Pending"))) is None


def test_verdict_names_every_router_and_stalls_only_when_waiting_will_not_help() -> None:
    image = PodProblem("ImagePullBackOff", "container router: not found")
    busy = PodProblem("Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")
    verdict = pods_verdict({"m-1": image, "m-0": image, "m-2": busy})
    assert (verdict.state, verdict.reason) == ("stalled", "ImagePullBackOff")
    assert verdict.message == ("m-0, m-1: ImagePullBackOff: container router: not found; "
                               "m-2: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.")
    verdict = pods_verdict({"m-2": busy})
    assert (verdict.state, verdict.reason) == ("progressing", "Unschedulable")


def test_a_problem_is_announced_once_and_again_when_it_changes() -> None:
    image = PodProblem("ImagePullBackOff", "container router: not found")
    body: Dict[str, Any] = {"apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": "m"},
                            "status": {"routerStatus": [{"name": "m-0", "ready": False}]}}
    (event,) = pod_events(body, {"m-0": image})
    assert (event.type, event.reason, event.message) == (
        "Warning", "ImagePullBackOff", "m-0: ImagePullBackOff: container router: not found")
    body["status"]["routerStatus"][0]["message"] = "pod not ready: ImagePullBackOff: container router: other"
    assert pod_events(body, {"m-0": image}) == [], "the back-off's own message changing is no news"
    crash = PodProblem("CrashLoopBackOff", "container router: last exit: Error (exit code 1)")
    assert [e.reason for e in pod_events(body, {"m-0": crash})] == ["CrashLoopBackOff"]


# -- against the API server ----------------------------------------------------------------------
def _kubelet_says(core: Any, ns: str, pod: str, state: Dict[str, Any],
                  last: Dict[str, Any] | None = None) -> None:
    """Stand-in for the kubelet: the pod's container status."""
    container = {"name": "router", "image": "qdmesh/router:9.9", "imageID": "", "ready": False,
                 "restartCount": 3, "state": state}
    if last:
        container["lastState"] = last
    core.patch_namespaced_pod_status(pod, ns, {"status": {"phase": "Pending",
                                                          "containerStatuses": [container]}})


def test_status_and_events_name_why_routers_do_not_run(crds: ControlPlane, tmp_path: Path) -> None:
    from kubernetes import client

    api, ns = api_namespace(crds, "why")
    kube = KubeApi(api)
    reconciler = MeshReconciler(kube, urls=lambda mesh, ready: {})
    client.CustomObjectsApi(api).create_namespaced_custom_object(G, V, ns, "routermeshes", {
        "apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": "why"},
        "spec": {"size": 1, "image": "qdmesh/router:9.9"}})
    events: List[Any] = []

    def reconcile() -> Dict[str, Any]:
        report: Report = reconciler.reconcile(ns, "why")
        for (plural, name), status in report.statuses.items():
            kube.patch_status(plural, ns, name, status)
        events.extend(report.events)
        time.sleep(0.01)
        return report.statuses[("routermeshes", "why")]

    def condition(status: Dict[str, Any], type_: str) -> Dict[str, Any]:
        return next(c for c in status["conditions"] if c["type"] == type_)

    reconcile()
    core = client.CoreV1Api(api)
    eventually(lambda: core.read_namespaced_pod("why-0", ns), 60, "the StatefulSet's pod")
    # Stand-ins for the scheduler and the kubelet (test_operator_lost_routers.Stage): a node of
    # its own, Ready (unschedulable: the real scheduler leaves it alone), the pod bound to it.
    node = f"{ns}-node"
    stage = Stage(api, ns)  # and for the kubelet: the node Ready
    try:
        stage.node(node)
        stage.bind("why-0", node)
        _image_then_crash(core, ns, reconcile, condition, events)
    finally:
        stage.close()
        core.delete_node(node)


def _image_then_crash(core: Any, ns: str, reconcile: Any, condition: Any, events: List[Any]) -> None:
    _kubelet_says(core, ns, "why-0", {"waiting": {"reason": "ErrImagePull", "message": PULL}})
    status = reconcile()
    stalled = condition(status, "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "ImagePullBackOff")
    assert stalled["message"] == f"why-0: ImagePullBackOff: container router: {PULL}"
    assert condition(status, "Ready")["status"] == "False"
    assert status["routerStatus"][0]["message"] == \
        f"pod not ready: ImagePullBackOff: container router: {PULL}"
    warnings = [e for e in events if e.type == "Warning"]
    assert [e.reason for e in warnings] == ["ImagePullBackOff"]

    # The kubelet backs off and says so; drift checks come and go: no second Event.
    _kubelet_says(core, ns, "why-0", {"waiting": {"reason": "ImagePullBackOff",
                                                  "message": 'Back-off pulling image "qdmesh/router:9.9"'}})
    for _ in range(3):
        status = reconcile()
    assert condition(status, "Stalled")["message"].endswith('Back-off pulling image "qdmesh/router:9.9"')
    assert [e.reason for e in events if e.type == "Warning"] == ["ImagePullBackOff"]

    # The image is found, the router crashes: a new problem, a new Event with the exit.
    _kubelet_says(core, ns, "why-0", {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
                  {"terminated": {"exitCode": 1, "reason": "Error", "message": "bad config"}})
    status = reconcile()
    stalled = condition(status, "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "CrashLoopBackOff")
    assert stalled["message"] == \
        "why-0: CrashLoopBackOff: container router: last exit: Error (exit code 1): bad config"
    assert [e.reason for e in events if e.type == "Warning"] == ["ImagePullBackOff", "CrashLoopBackOff"]
