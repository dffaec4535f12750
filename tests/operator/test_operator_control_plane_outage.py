"""Kubernetes' control plane away, then back: its node lifecycle controller finds every node's
status stale and marks them all not ready together, with their pods.  The routers ran on
through it, and their management says so: they are not called lost (no ``RoutersLost``
Event, ``lostRouters`` empty, the reason ``NodesNotReady`` says what is going on), and the
status is whole again at the pods' next change, not at the next drift check (300 s here).

A ``qdmesh-operator`` process against a REAL API server with controllers; routers are local
(QDMESH_ROUTER_URLS); the test plays the kubelet and the node lifecycle controller
(tests/operator/test_operator_lost_routers.py's Stage)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from qdmesh_operator.apply.router_urls import OVERRIDE_ENV
from qdmesh_operator.status.lost import lost_routers
from tests.kube.controlplane import ControlPlane
from tests.mesh.conftest import LINE3, MeshFactory
from tests.operator.kube_operator import Cluster, api_namespace, eventually
from tests.operator.test_operator_lost_routers import MESH, Stage, _body, _observed

pytestmark = pytest.mark.timeout(240)


def test_routers_that_answer_are_not_lost_when_every_node_turns_not_ready_together() -> None:
    from qdmesh_operator.apply.management import RouterOutcome
    from qdmesh_operator.kube.api import NodeHealth
    from qdmesh_operator.rolling import PodState

    pods = {f"m-{i}": PodState(i, "r", False, "ab"[i % 2]) for i in range(3)}
    down = {n: NodeHealth(n, False, "NodeStatusUnknown", "Kubelet stopped posting node status.")
            for n in "ab"}
    answers = {f"m-{i}": RouterOutcome(f"m-{i}", "amqp://x") for i in range(3)}
    observed = _observed(pods, down)
    observed.nodes_all_down = True
    assert lost_routers(MESH, _body(["m-0", "m-1", "m-2"]), observed=observed, outcomes=answers,
                        rolling="") == []
    # One that does not answer is lost as before.
    answers["m-2"] = RouterOutcome("m-2", "amqp://x", error="timed out")
    lost = lost_routers(MESH, _body(["m-0", "m-1", "m-2"]), observed=observed, outcomes=answers, rolling="")
    assert [(r.name, r.reason) for r in lost] == [("m-2", "NodeNotReady")]
    # The kubelets post again one by one: while a node is still not ready, the routers on it
    # that answer are still not lost (the last status said NodesNotReady).
    observed.nodes_all_down = False
    observed.on_unready_nodes = ["m-1"]
    pods["m-0"].ready = pods["m-2"].ready = True
    away = _body(["m-0", "m-1", "m-2"])
    away["status"]["conditions"] = [{"type": "Reconciling", "status": "True", "reason": "NodesNotReady"}]
    recovering = {**down, "a": NodeHealth("a", True)}
    observed.nodes = recovering
    answers["m-2"] = RouterOutcome("m-2", "amqp://x")
    assert lost_routers(MESH, away, observed=observed, outcomes=answers, rolling="") == []
    # With one node still ready it is a node loss: answering or not, its routers are lost.
    observed.nodes = down
    observed.on_unready_nodes = ["m-0", "m-1", "m-2"]
    lost = lost_routers(MESH, _body(["m-0", "m-1", "m-2"]), observed=observed, outcomes=answers, rolling="")
    assert [r.name for r in lost] == ["m-0", "m-1", "m-2"]


def _status(kube: Cluster) -> Dict[str, Any]:
    return dict(kube.get("routermeshes", "calm").get("status") or {})


def _reason(kube: Cluster, type_: str = "Ready") -> str:
    return str(kube.condition("routermeshes", "calm", type_).get("reason") or "")


def test_control_plane_outage_is_no_router_loss(crds: ControlPlane, mesh_factory: MeshFactory,
                                                tmp_path: Path) -> None:
    local = mesh_factory(LINE3)
    api, ns = api_namespace(crds, "outage")
    kube = Cluster(crds, ns)
    urls = tmp_path / "urls.json"
    urls.write_text(json.dumps({f"{ns}/calm-{i}": local.routers[r].url for i, r in enumerate("ABC")}))
    log = tmp_path / "operator.log"
    env = {**crds.env(), OVERRIDE_ENV: str(urls)}
    operator = subprocess.Popen(
        [sys.executable, "-m", "qdmesh_operator.main", "-n", ns, "--health-port", "0", "--metrics-port", "0",
         "--drift-interval", "300"], env=env, stdout=subprocess.DEVNULL, stderr=open(log, "ab"))
    stage = Stage(api, ns)
    nodes = [f"{ns}-a", f"{ns}-b"]
    try:
        kube.create("routermeshes", "RouterMesh", "calm", {"size": 3, "image": "qdmesh/router:0.1.0"})
        eventually(lambda: len(kube.core.list_namespaced_pod(ns).items) == 3, 60, "the StatefulSet's 3 pods")
        for node in nodes:
            stage.node(node)
        for i, node in enumerate((nodes[0], nodes[1], nodes[1])):
            stage.bind(f"calm-{i}", node)
            stage.pod_ready(f"calm-{i}", True)
        eventually(lambda: _status(kube).get("readyRouters") == 3 and _reason(kube) == "Applied", 60,
                   "3 routers ready")
        # (QDMESH_ROUTER_URLS reaches the local routers before their pods run, so the mesh's
        # start may already have said RoutersLost/RoutersBack: only what comes next counts.)
        before = {e.metadata.name for e in kube.events("calm")}

        def news(*reasons: str) -> list:
            return [e.message for e in kube.events("calm")
                    if e.reason in reasons and e.metadata.name not in before]

        # The control plane is back after an outage: every node Unknown at once, their pods not
        # ready (the node lifecycle controller, stand-in). The routers never stopped.
        for node in nodes:
            stage.node_ready(node, "Unknown")
        for i in range(3):
            stage.pod_ready(f"calm-{i}", False)
        eventually(lambda: _reason(kube, "Reconciling") == "NodesNotReady", 60, "NodesNotReady status")
        status = _status(kube)
        assert status["lostRouters"] == [], status["lostRouters"]
        assert _reason(kube, "Degraded") == "NoRouterLost"
        message = kube.condition("routermeshes", "calm", "Reconciling")["message"]
        assert "3 of 3 routers on them answer management" in message, message
        assert not news("RoutersLost"), news("RoutersLost")

        # The kubelets post again: nodes and pods ready. The pods' change brings the status back
        # at once; the next drift check is minutes away.
        for node in nodes:
            stage.node_ready(node, "True")
        for i in range(3):
            stage.pod_ready(f"calm-{i}", True)
        eventually(lambda: _reason(kube) == "Applied" and _status(kube).get("readyRouters") == 3, 30,
                   "Ready again, from the pods' watch events")
        assert not news("RoutersLost", "RoutersBack"), news("RoutersLost", "RoutersBack")
        assert operator.poll() is None, log.read_text()[-3000:]
    finally:
        stage.close()
        operator.terminate()
        try:
            operator.wait(30)
        except subprocess.TimeoutExpired:
            operator.kill()
            operator.wait(10)
        for node in nodes:
            try:
                kube.core.delete_node(node)
            except Exception:
                pass
