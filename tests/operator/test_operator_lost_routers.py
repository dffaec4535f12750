"""Routers lost after they ran: with their node (stopped: NotReady/unreachable), with
their pod (not Ready) or with their management (no answer).  The RouterMesh's status says so
(readyRouters, each router's ready and node, status.lostRouters, Ready=False with reason
RoutersLost, Degraded=True naming the routers) and Events name the routers lost, once, and
again when they are back.

Against a REAL API server with controllers (tests/kube: no kubelet) and real local routers for
management (QDMESH_ROUTER_URLS).  Stand-ins, named as such below: the test plays the kubelet
(node and pod status through their status subresources), the scheduler (pod bindings, to
nodes marked unschedulable so the real scheduler leaves them alone) and the node lifecycle
controller (a stopped node's Ready=Unknown, its pods' Ready=False)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest

from qdmesh_operator.apply.management import RouterOutcome
from qdmesh_operator.apply.router_urls import OVERRIDE_ENV
from qdmesh_operator.kube.api import KubeApi, NodeHealth, node_health_of
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.observe.cluster import Observed
from qdmesh_operator.reconcile import MeshReconciler, Report
from qdmesh_operator.rolling import PodState
from qdmesh_operator.status.lost import lost_events, lost_routers
from tests.kube.controlplane import ControlPlane
from tests.mesh.conftest import LINE3, MeshFactory
from tests.operator.kube_operator import G, V, api_namespace, eventually

pytestmark = pytest.mark.timeout(180)

MESH = parse_mesh("m", "ns", {"size": 3, "image": "qdmesh/router:0.1.0"})
SETTLE = 1.0  # seconds a node that turned not ready settles (reconcile.NODE_SETTLE_S)


def _observed(pods: Dict[str, PodState], nodes: Dict[str, NodeHealth] | None) -> Observed:
    observed = Observed("ns", "m", {})
    observed.pods, observed.nodes = pods, nodes
    return observed


def _body(ready: List[str], lost: Sequence[str] = ()) -> Dict[str, Any]:
    """A RouterMesh whose last status said ``ready`` were ready and ``lost`` were lost."""
    return {"apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": "m", "namespace": "ns"},
            "status": {"routerStatus": [{"name": f"m-{i}", "ready": f"m-{i}" in ready} for i in range(3)],
                       "lostRouters": [{"name": n} for n in lost]}}


def test_a_router_is_lost_only_after_it_ran_and_with_its_node_always() -> None:
    pods = {"m-0": PodState(0, "r", True, "a"), "m-1": PodState(1, "r", False, "b"),
            "m-2": PodState(2, "r", False, "a")}
    nodes = {"a": NodeHealth("a", True), "b": NodeHealth("b", False, "NodeStatusUnknown", "Kubelet stopped "
                                                         "posting node status.")}
    unreachable = {"m-0": RouterOutcome("m-0", "amqp://x", error="timed out")}
    # A new mesh: m-2 never ran, so it is only not ready yet; m-1's node is gone whatever it did.
    lost = lost_routers(MESH, _body([]), observed=_observed(pods, nodes), outcomes={}, rolling="")
    assert [(r.name, r.node, r.reason) for r in lost] == [("m-1", "b", "NodeNotReady")]
    assert lost[0].message == ("its node b is not ready "
                               "(NodeStatusUnknown: Kubelet stopped posting node status.)")
    # After they all ran: m-0's management does not answer, m-2's pod is not ready.
    lost = lost_routers(MESH, _body(["m-0", "m-1", "m-2"]), observed=_observed(pods, nodes),
                        outcomes=unreachable, rolling="")
    assert [(r.name, r.reason) for r in lost] == [("m-0", "ManagementUnreachable"), ("m-1", "NodeNotReady"),
                                                  ("m-2", "PodNotReady")]
    # A node that turned not ready a moment ago settles first: others may follow it.
    settling = _observed(pods, nodes)
    settling.settling = {"b"}
    assert lost_routers(MESH, _body([]), observed=settling, outcomes={}, rolling="") == []
    # A rolling restart replaces pods on purpose: only the node still counts.
    lost = lost_routers(MESH, _body(["m-0", "m-1", "m-2"]), observed=_observed(pods, nodes), outcomes={},
                        rolling="rolling")
    assert [r.name for r in lost] == ["m-1"]
    # Without the right to read nodes, pods still tell (once the node controller marked them).
    lost = lost_routers(MESH, _body(["m-1"]), observed=_observed(pods, None), outcomes={}, rolling="")
    assert [(r.name, r.reason) for r in lost] == [("m-1", "PodNotReady")]
    # A router the last status said was lost stays lost until its pod is back.
    lost = lost_routers(MESH, _body([], ["m-2"]), observed=_observed({}, {}), outcomes={}, rolling="")
    assert [(r.name, r.reason) for r in lost] == [("m-2", "PodMissing")]


def test_a_node_is_judged_by_its_ready_condition_not_by_taints_that_lag_behind_it() -> None:
    from kubernetes.client import V1Node, V1NodeCondition, V1NodeSpec, V1NodeStatus, V1ObjectMeta, V1Taint

    def node(ready: str, *taints: str) -> Any:
        reason = "KubeletReady" if ready == "True" else "NodeStatusUnknown"
        return V1Node(metadata=V1ObjectMeta(name="n"),
                      spec=V1NodeSpec(taints=[V1Taint(key=t, effect="NoSchedule") for t in taints]),
                      status=V1NodeStatus(conditions=[V1NodeCondition(type="Ready", status=ready,
                                                                      reason=reason)]))
    # A new node keeps the admission plugin's not-ready taint, and a node back from a loss the
    # lifecycle controller's unreachable taint, for a while after its kubelet posts Ready.
    assert node_health_of(node("True", "node.kubernetes.io/not-ready")).ready
    assert node_health_of(node("True", "node.kubernetes.io/unreachable")).ready
    lost = node_health_of(node("Unknown", "node.kubernetes.io/unreachable"))
    assert (lost.ready, lost.reason) == (False, "NodeStatusUnknown")
    assert not node_health_of(V1Node(metadata=V1ObjectMeta(name="n"), status=V1NodeStatus())).ready


def test_lost_and_back_events_are_posted_once() -> None:
    pods = {f"m-{i}": PodState(i, "r", i == 0, "a") for i in range(3)}
    observed = _observed(pods, {})
    lost = lost_routers(MESH, _body(["m-0", "m-1"], ["m-2"]), observed=observed, outcomes={}, rolling="")
    events = lost_events(_body(["m-0", "m-1"], ["m-2"]), lost, observed, 3)
    # m-2 was already reported: only m-1 is news.
    assert [(e.type, e.reason, e.message) for e in events] == [
        ("Warning", "RoutersLost", "1 of 3 routers lost: m-1 (its pod is not ready on node a)")]
    pods["m-1"].ready = pods["m-2"].ready = True
    events = lost_events(_body(["m-0"], ["m-1", "m-2"]), [], observed, 3)
    assert [(e.type, e.reason) for e in events] == [("Normal", "RoutersBack")]
    assert events[0].message.startswith("m-1, m-2 back")


# -- against the API server ----------------------------------------------------------------------
def _condition(status: Dict[str, Any], type_: str) -> Dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


class Stage:
    """The test's stand-ins for the kubelet, the scheduler and the node lifecycle controller."""

    def __init__(self, api: Any, namespace: str) -> None:
        from kubernetes import client

        self.core: Any = client.CoreV1Api(api)
        self.ns = namespace
        # Each node's Ready as its kubelet (stand-in) posts it. A kubelet posts every few
        # seconds: the real node lifecycle controller marks a node whose heartbeat is older
        # than its grace period (40-50 s) Unknown, however long the test took to get there.
        self._posted: Dict[str, str] = {}
        self._stop = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, name="kubelet-stand-in", daemon=True)
        self._heartbeat.start()

    def _beat(self) -> None:
        while not self._stop.wait(3.0):
            for name, status in list(self._posted.items()):
                if status == "True":
                    try:
                        self.node_ready(name, status)
                    except Exception:  # the node is being deleted as the test ends
                        pass

    def close(self) -> None:
        self._stop.set()
        self._heartbeat.join(10)

    def node(self, name: str) -> None:
        # Unschedulable: the real scheduler binds nothing here; the test does (see bind).
        self.core.create_node({"metadata": {"name": name}, "spec": {"unschedulable": True}})
        self.node_ready(name, "True")

    def node_ready(self, name: str, status: str) -> None:
        """Stand-in for the kubelet (True) or the node lifecycle controller (Unknown)."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        reason, message = (("KubeletReady", "kubelet is posting ready status") if status == "True" else
                           ("NodeStatusUnknown", "Kubelet stopped posting node status."))
        self._posted[name] = status
        self.core.patch_node_status(name, {"status": {"conditions": [
            {"type": "Ready", "status": status, "reason": reason, "message": message,
             "lastHeartbeatTime": now, "lastTransitionTime": now}]}})

    def bind(self, pod: str, node: str) -> None:
        """Stand-in for the scheduler."""
        self.core.create_namespaced_binding(self.ns, {
            "metadata": {"name": pod}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}},
            _preload_content=False)

    def pod_ready(self, pod: str, ready: bool) -> None:
        """Stand-in for the kubelet (and, for False, the node lifecycle controller)."""
        self.core.patch_namespaced_pod_status(pod, self.ns, {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]}})


def test_routers_lost_with_their_node_and_back(crds: ControlPlane, mesh_factory: MeshFactory,
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    local = mesh_factory(LINE3)
    urls = {f"lossy-{i}": local.routers[name].url for i, name in enumerate("ABC")}
    api, ns = api_namespace(crds, "lost")
    # Management through local routers; like router_urls, only routers whose pods are ready.
    overrides = tmp_path / "urls.json"
    overrides.write_text(json.dumps({f"{ns}/{rid}": url for rid, url in urls.items()}))
    monkeypatch.setenv(OVERRIDE_ENV, str(overrides))
    kube = KubeApi(api)
    reconciler = MeshReconciler(kube, urls=lambda mesh, ready: {r: urls[r] for r in ready},
                                node_settle_s=SETTLE)
    client.CustomObjectsApi(api).create_namespaced_custom_object(G, V, ns, "routermeshes", {
        "apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": "lossy"},
        "spec": {"size": 3, "image": "qdmesh/router:0.1.0"}})

    def reconcile() -> Report:
        """One reconciliation, its status written as the kopf handler writes it."""
        report = reconciler.reconcile(ns, "lossy")
        for (plural, name), status in report.statuses.items():
            kube.patch_status(plural, ns, name, status)
        time.sleep(0.01)  # a later request starts a new reconciliation (see MeshReconciler.reconcile)
        return report

    reconcile()  # the StatefulSet; its controller makes the pods
    pods = [f"lossy-{i}" for i in range(3)]
    eventually(lambda: len(kube.pods(ns, "lossy")) == 3, 60, "the StatefulSet's 3 pods")
    apps: Any = client.AppsV1Api(api)

    def sts_ready() -> int:
        return int(apps.read_namespaced_stateful_set("lossy", ns).status.ready_replicas or 0)
    # Nodes are cluster-wide: named after the namespace, removed however the test ends.
    node_a, node_b = f"{ns}-a", f"{ns}-b"
    stage = Stage(api, ns)
    try:
        _lose_and_get_back(reconcile, stage, kube, sts_ready, ns, pods, node_a, node_b, local)
    finally:
        stage.close()
        for name in (node_a, node_b):
            try:
                client.CoreV1Api(api).delete_node(name)
            except client.ApiException:
                pass


def _lose_and_get_back(reconcile: Any, stage: Stage, kube: KubeApi, sts_ready: Any, ns: str,
                       pods: List[str], node_a: str, node_b: str, local: Any) -> None:
    for name in (node_a, node_b):
        stage.node(name)
    for pod, node in zip(pods, (node_a, node_b, node_b)):
        stage.bind(pod, node)
        stage.pod_ready(pod, True)
    eventually(lambda: sts_ready() == 3, 60, "the StatefulSet controller counts 3 ready pods")

    status = reconcile().statuses[("routermeshes", "lossy")]
    assert status["readyRouters"] == 3 and status["lostRouters"] == []
    assert [(r["name"], r["node"], r["ready"]) for r in status["routerStatus"]] == [
        (pods[0], node_a, True), (pods[1], node_b, True), (pods[2], node_b, True)]
    assert _condition(status, "Degraded")["status"] == "False"

    # node-b stops. The node lifecycle controller (stand-in) marks it Unknown first; its pods
    # still count as ready for the StatefulSet: the node alone tells the operator.
    stage.node_ready(node_b, "Unknown")
    # First seen now: the node settles (the node lifecycle controller may be marking others).
    settling = reconcile()
    assert settling.statuses[("routermeshes", "lossy")]["lostRouters"] == []
    assert settling.recheck_in is not None and 0 < settling.recheck_in <= SETTLE
    assert not [e for e in settling.events if e.reason == "RoutersLost"]
    time.sleep(SETTLE)
    report = reconcile()
    status = report.statuses[("routermeshes", "lossy")]
    assert status["readyRouters"] == 1
    assert [(r["name"], r["node"], r["reason"]) for r in status["lostRouters"]] == [
        (pods[1], node_b, "NodeNotReady"), (pods[2], node_b, "NodeNotReady")]
    assert [r["ready"] for r in status["routerStatus"]] == [True, False, False]
    assert status["routerStatus"][1]["message"].startswith(f"lost: its node {node_b} is not ready")
    ready, degraded = _condition(status, "Ready"), _condition(status, "Degraded")
    assert (ready["status"], ready["reason"]) == ("False", "RoutersLost")
    assert (degraded["status"], degraded["reason"]) == ("True", "RoutersLost")
    assert degraded["message"].startswith(f"2 of 3 routers lost: lossy-1 (its node {node_b} is not ready")
    lost_events_posted = [e for e in report.events if e.reason == "RoutersLost"]
    assert len(lost_events_posted) == 1 and lost_events_posted[0].type == "Warning"
    assert "lossy-1" in lost_events_posted[0].message and "lossy-2" in lost_events_posted[0].message

    # Then its pods (stand-in); reconciling again changes nothing and posts nothing new, also
    # when it starts before the handler wrote the last status (as happened on kind: the same
    # RoutersLost Event three times).
    for pod in pods[1:]:
        stage.pod_ready(pod, False)
    kube.patch_status("routermeshes", ns, "lossy", {"lostRouters": []})  # as if not written yet
    time.sleep(0.01)
    report = reconcile()
    assert [e.reason for e in report.events if e.reason in ("RoutersLost", "RoutersBack")] == []
    assert report.statuses[("routermeshes", "lossy")]["readyRouters"] == 1

    # node-b back, its pods ready: not lost any more, one RoutersBack Event naming both.
    stage.node_ready(node_b, "True")
    for pod in pods[1:]:
        stage.pod_ready(pod, True)
    eventually(lambda: sts_ready() == 3, 60, "the StatefulSet controller counts 3 ready pods again")
    report = reconcile()
    status = report.statuses[("routermeshes", "lossy")]
    assert status["readyRouters"] == 3 and status["lostRouters"] == []
    assert _condition(status, "Degraded")["status"] == "False"
    assert [e.message for e in report.events if e.reason == "RoutersBack"] == [
        "lossy-1, lossy-2 back: pod ready again and no longer counted as lost"]

    # A router whose pod says Ready but whose management does not answer is lost too.
    local.kill("C")
    status = reconcile().statuses[("routermeshes", "lossy")]
    assert [(r["name"], r["reason"]) for r in status["lostRouters"]] == [("lossy-2", "ManagementUnreachable")]
    assert status["readyRouters"] == 2
