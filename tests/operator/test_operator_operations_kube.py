"""Day-2 operations against a REAL API server (no kubelet: router pods never run), with
``qdmesh-operator`` running as a process (kopf registers its handlers once per process, and
test_operator_kube.py runs it in-process): a paused mesh changes nothing until the annotation
goes, then applies what changed meanwhile; a manual rolling update starts a roll once (of the
edge groups too) and the annotation goes; a due roll waits for a maintenance window, and so does
an edge group's rollout."""

from __future__ import annotations

import datetime
import json
import time
from typing import Any, Dict, Iterator

import pytest

from qdmesh_operator.operations import MANUAL_ROLL_ANNOTATION, PAUSE_ANNOTATION, RESTARTED_AT_ANNOTATION
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import Cluster, G, V, eventually, operator_process

pytestmark = pytest.mark.timeout(240)

IMAGE, NEW_IMAGE = "qdmesh/router:0.1.0", "qdmesh/router:0.2.0"


@pytest.fixture(scope="module")
def kube(crds: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """This module's own operator, a process (tests/operator/kube_operator.py)."""
    with operator_process(crds, tmp_path_factory, "ops") as cluster:
        yield cluster


def _annotate(kube: Cluster, name: str, annotations: Dict[str, Any]) -> None:
    kube.custom.patch_namespaced_custom_object(G, V, kube.ns, "routermeshes", name,
                                               {"metadata": {"annotations": annotations}},
                                               _content_type="application/merge-patch+json")


def _reasons(kube: Cluster, name: str) -> list:
    return [e.reason for e in kube.events(name)]


def test_paused_mesh_changes_nothing_until_resumed(kube: Cluster) -> None:
    kube.create("routermeshes", "RouterMesh", "calm", {"size": 2, "image": IMAGE})
    eventually(lambda: kube.get("routermeshes", "calm").get("status", {}).get("observedGeneration") == 1,
               60, "first status")
    _annotate(kube, "calm", {PAUSE_ANNOTATION: "true"})
    paused = eventually(lambda: kube.condition("routermeshes", "calm", "ReconciliationPaused"), 30,
                        "ReconciliationPaused condition")
    assert paused["status"] == "True" and PAUSE_ANNOTATION in paused["message"]
    ready_before = kube.condition("routermeshes", "calm", "Ready")
    kube.patch_spec("routermeshes", "calm", {"size": 3, "image": NEW_IMAGE,
                                            "disruptionBudget": {"maxUnavailable": 2}})
    kube.create("linkroutes", "LinkRoute", "calm-orders", {"meshRef": "calm", "prefix": "orders.",
                                                           "containerId": "broker"})
    eventually(lambda: kube.condition("linkroutes", "calm-orders", "ReconciliationPaused").get("status")
               == "True", 30, "the LinkRoute paused with its mesh")
    # The reconciliation that paused the LinkRoute read the mesh after its spec changed: it
    # changed nothing; nor may the drift checks since.
    sts = kube.apps.read_namespaced_stateful_set("calm", kube.ns)
    assert sts.spec.replicas == 2 and sts.spec.template.spec.containers[0].image == IMAGE
    pdb = kube.policy.read_namespaced_pod_disruption_budget("calm", kube.ns)
    assert pdb.spec.max_unavailable == 1
    status = kube.get("routermeshes", "calm")["status"]
    assert status["observedGeneration"] == 1
    ready = kube.condition("routermeshes", "calm", "Ready")
    assert ready == ready_before  # as it was when the pause began, whatever the pods did since
    assert _reasons(kube, "calm").count("ReconciliationPaused") == 1

    _annotate(kube, "calm", {PAUSE_ANNOTATION: None})

    def resumed() -> bool:
        sts = kube.apps.read_namespaced_stateful_set("calm", kube.ns)
        return sts.spec.replicas == 3 and sts.spec.template.spec.containers[0].image == NEW_IMAGE

    eventually(resumed, 30, "what changed while paused applied")
    eventually(lambda: kube.get("routermeshes", "calm")["status"]["observedGeneration"] == 2, 30,
               "observedGeneration of the new spec")
    assert kube.policy.read_namespaced_pod_disruption_budget("calm", kube.ns).spec.max_unavailable == 2
    assert kube.condition("routermeshes", "calm", "ReconciliationPaused") == {}
    eventually(lambda: kube.condition("linkroutes", "calm-orders", "ReconciliationPaused") == {}, 30,
               "the LinkRoute resumed")
    eventually(lambda: "ReconciliationResumed" in _reasons(kube, "calm"), 30, "ReconciliationResumed Event")


def test_manual_rolling_update_rolls_once_and_the_annotation_goes(kube: Cluster) -> None:
    kube.create("routermeshes", "RouterMesh", "roll", {"size": 3, "image": IMAGE})
    eventually(lambda: kube.get("routermeshes", "roll").get("status", {}).get("observedGeneration") == 1,
               60, "first status")
    sts = kube.apps.read_namespaced_stateful_set("roll", kube.ns)
    assert RESTARTED_AT_ANNOTATION not in (sts.spec.template.metadata.annotations or {})
    _annotate(kube, "roll", {MANUAL_ROLL_ANNOTATION: "true"})

    def rolling() -> Any:
        sts = kube.apps.read_namespaced_stateful_set("roll", kube.ns)
        stamp = (sts.spec.template.metadata.annotations or {}).get(RESTARTED_AT_ANNOTATION)
        return stamp if stamp and sts.spec.update_strategy.rolling_update.partition == 2 else None

    stamp = eventually(rolling, 30, "the pod template restamped and router 2 released first")
    eventually(lambda: MANUAL_ROLL_ANNOTATION not in (kube.get("routermeshes", "roll")["metadata"]
                                                      .get("annotations") or {}), 30, "annotation removed")
    eventually(lambda: "ManualRollingUpdate" in _reasons(kube, "roll"), 30, "ManualRollingUpdate Event")
    time.sleep(3)  # drift checks: the stamp is kept, the roll is not started again
    sts = kube.apps.read_namespaced_stateful_set("roll", kube.ns)
    assert sts.spec.template.metadata.annotations[RESTARTED_AT_ANNOTATION] == stamp
    assert _reasons(kube, "roll").count("ManualRollingUpdate") == 1
    status = kube.get("routermeshes", "roll")["status"]
    assert status["rollingRestart"]["state"] == "Rolling"
    manual = "manual rolling update requested (qdmesh.io/manual-rolling-update)"
    assert status["rollingRestart"]["reasons"] == [manual]
    said = [e.message for e in kube.events("roll") if e.reason == "RollingRestart"]
    assert said and said[0].endswith(f": {manual}")


def test_a_due_roll_waits_for_a_maintenance_window(kube: Cluster) -> None:
    later = (datetime.datetime.now(datetime.timezone.utc).hour + 12) % 24  # not within the test
    kube.create("routermeshes", "RouterMesh", "win", {"size": 3, "image": IMAGE,
                                                      "maintenanceTimeWindows": [f"* {later} * * *"]})
    eventually(lambda: kube.get("routermeshes", "win").get("status", {}).get("observedGeneration") == 1,
               60, "first status")
    kube.patch_spec("routermeshes", "win", {"image": NEW_IMAGE})

    def pending() -> Any:
        return kube.condition("routermeshes", "win", "RollingRestartPending").get("status") == "True"

    eventually(pending, 30, "RollingRestartPending")
    sts = kube.apps.read_namespaced_stateful_set("win", kube.ns)
    # The new template is there, but no router may take it: the partition is the mesh's size.
    assert sts.spec.template.spec.containers[0].image == NEW_IMAGE
    assert sts.spec.update_strategy.rolling_update.partition == 3
    assert sts.metadata.annotations["qdmesh.io/rolling-restart-pending"] == "true"
    status = kube.get("routermeshes", "win")["status"]
    assert status["rollingRestart"]["state"] == "Pending"
    assert status["rollingRestart"]["reasons"] == ["spec.image changed"]
    assert "rolling restart pending until a maintenance window" in kube.condition(
        "routermeshes", "win", "RollingRestartPending")["message"]
    kube.patch_spec("routermeshes", "win", {"maintenanceTimeWindows": ["* * * * *"]})  # always open
    eventually(lambda: kube.apps.read_namespaced_stateful_set("win", kube.ns)
               .spec.update_strategy.rolling_update.partition == 2, 30, "the roll started in the window")
    eventually(lambda: kube.condition("routermeshes", "win", "RollingRestartPending") == {}, 30,
               "no longer pending")
    annotations = kube.apps.read_namespaced_stateful_set("win", kube.ns).metadata.annotations
    assert "qdmesh.io/rolling-restart-pending" not in annotations


def test_admission_refuses_a_window_that_is_not_cron_naming_the_field(kube: Cluster) -> None:
    from kubernetes.client.rest import ApiException

    with pytest.raises(ApiException) as caught:
        kube.create("routermeshes", "RouterMesh", "badwin",
                    {"image": IMAGE, "maintenanceTimeWindows": ["sundays"]})
    assert caught.value.status == 422
    message = json.loads(caught.value.body)["message"]
    assert "spec.maintenanceTimeWindows: each is a cron expression" in message
    # What CEL lets by (the shape of cron, a value out of range) the operator refuses in status.
    kube.create("routermeshes", "RouterMesh", "badhour",
                {"image": IMAGE, "maintenanceTimeWindows": ["* 25 * * *"]})
    stalled = eventually(lambda: kube.condition("routermeshes", "badhour", "Stalled").get("status") == "True"
                         and kube.condition("routermeshes", "badhour", "Stalled"), 30, "Stalled")
    assert stalled["message"].startswith("spec.maintenanceTimeWindows[0]: '* 25 * * *': hour: 25")


EDGE_GROUPS = [{"name": "apps", "size": 2}, {"name": "nodes", "perNode": True}]


def test_edge_group_rollouts_wait_for_a_maintenance_window(kube: Cluster) -> None:
    later = (datetime.datetime.now(datetime.timezone.utc).hour + 12) % 24  # not within the test
    kube.create("routermeshes", "RouterMesh", "ewin", {"size": 1, "image": IMAGE, "edgeGroups": EDGE_GROUPS,
                                                       "maintenanceTimeWindows": [f"* {later} * * *"]})
    eventually(lambda: kube.get("routermeshes", "ewin").get("status", {}).get("observedGeneration") == 1,
               60, "first status")
    eventually(lambda: kube.apps.read_namespaced_deployment("ewin-edge-apps", kube.ns), 30, "the Deployment")
    assert not kube.apps.read_namespaced_deployment("ewin-edge-apps", kube.ns).spec.paused
    kube.patch_spec("routermeshes", "ewin", {"image": NEW_IMAGE})

    def pending() -> Any:
        condition = kube.condition("routermeshes", "ewin", "RollingRestartPending")
        return condition.get("status") == "True" and "edge group nodes" in condition["message"] and condition

    condition = eventually(pending, 30, "RollingRestartPending naming the edge groups")
    assert "edge group apps: pod template changed" in condition["message"]
    # The new template is stored, but no edge router may take it.
    deployment = kube.apps.read_namespaced_deployment("ewin-edge-apps", kube.ns)
    assert deployment.spec.template.spec.containers[0].image == NEW_IMAGE and deployment.spec.paused is True
    assert deployment.metadata.annotations["qdmesh.io/rolling-restart-pending"] == "true"
    daemon_set = kube.apps.read_namespaced_daemon_set("ewin-edge-nodes", kube.ns)
    assert daemon_set.spec.template.spec.containers[0].image == NEW_IMAGE
    assert daemon_set.spec.update_strategy.type == "OnDelete"
    status = kube.get("routermeshes", "ewin")["status"]
    assert status["rollingRestart"]["state"] == "Pending"
    assert status["rollingRestart"]["reasons"] == ["spec.image changed",
                                                   "edge group apps: pod template changed",
                                                   "edge group nodes: pod template changed"]
    time.sleep(3)  # drift checks meanwhile: still held
    assert kube.apps.read_namespaced_deployment("ewin-edge-apps", kube.ns).spec.paused is True

    kube.patch_spec("routermeshes", "ewin", {"maintenanceTimeWindows": ["* * * * *"]})  # always open

    def rolling_out() -> bool:
        deployment = kube.apps.read_namespaced_deployment("ewin-edge-apps", kube.ns)
        daemon_set = kube.apps.read_namespaced_daemon_set("ewin-edge-nodes", kube.ns)
        strategy = daemon_set.spec.update_strategy
        return (not deployment.spec.paused and strategy.type == "RollingUpdate"
                and strategy.rolling_update.max_unavailable == 0
                and "qdmesh.io/rolling-restart-pending" not in (deployment.metadata.annotations or {}))

    eventually(rolling_out, 30, "the edge rollouts released in the window, one router at a time")
    eventually(lambda: kube.condition("routermeshes", "ewin", "RollingRestartPending") == {}, 30,
               "no longer pending")
    deployment = kube.apps.read_namespaced_deployment("ewin-edge-apps", kube.ns)
    assert deployment.spec.strategy.rolling_update.max_unavailable == 0
    assert deployment.spec.strategy.rolling_update.max_surge == 1


def test_manual_rolling_update_rolls_the_edge_groups_too(kube: Cluster) -> None:
    kube.create("routermeshes", "RouterMesh", "eroll", {"size": 1, "image": IMAGE, "edgeGroups": EDGE_GROUPS})
    eventually(lambda: kube.get("routermeshes", "eroll").get("status", {}).get("observedGeneration") == 1,
               60, "first status")
    eventually(lambda: kube.apps.read_namespaced_daemon_set("eroll-edge-nodes", kube.ns), 30, "the DaemonSet")

    def stamps() -> Dict[str, Any]:
        templates = {"routers": kube.apps.read_namespaced_stateful_set("eroll", kube.ns).spec.template,
                     "apps": kube.apps.read_namespaced_deployment("eroll-edge-apps", kube.ns).spec.template,
                     "nodes": kube.apps.read_namespaced_daemon_set("eroll-edge-nodes", kube.ns).spec.template}
        return {name: (template.metadata.annotations or {}).get(RESTARTED_AT_ANNOTATION)
                for name, template in templates.items()}

    assert stamps() == {"routers": None, "apps": None, "nodes": None}
    _annotate(kube, "eroll", {MANUAL_ROLL_ANNOTATION: "true"})
    stamped = eventually(lambda: None not in stamps().values() and stamps(), 30,
                         "every pod template restamped")
    assert len(set(stamped.values())) == 1, stamped  # one roll asked for, one stamp
    eventually(lambda: MANUAL_ROLL_ANNOTATION not in (kube.get("routermeshes", "eroll")["metadata"]
                                                      .get("annotations") or {}), 30, "annotation removed")
    time.sleep(3)  # drift checks: the stamps are kept, nothing rolls again
    assert stamps() == stamped
    assert not kube.apps.read_namespaced_deployment("eroll-edge-apps", kube.ns).spec.paused
