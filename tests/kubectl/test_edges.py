"""kubectl-qdstat and a RouterMesh's edge routers, against a real API server: ``--edge-routers`` lists
them from the mesh's status and pods (no port-forward), and an edge router's pod is a target
like any router (``--router POD``, ``pod/NAME``), here led by the fake port-forward to a real
local router (there is no kubelet)."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, List, Tuple

import pytest

from qdmesh_kubectl.qdstat import main
from tests.kube.controlplane import ControlPlane

from .fakes import FakePortForward
from .kubeobjects import install_crds, make_namespace
from .localmesh import PODS, LocalMesh

pytestmark = pytest.mark.timeout(180)

EDGE_PODS = ["demo-edge-apps-5d8f7-abcde", "demo-edge-apps-5d8f7-fghij"]
STATUS: Dict[str, Any] = {
    "edges": 3, "readyEdges": 1, "edgesReady": "1/3",
    "edgeGroups": [{"name": "apps", "kind": "Deployment", "edges": 3, "readyEdges": 1, "routers": [
        {"name": EDGE_PODS[0], "ready": True, "node": "n1", "routerId": "Router.a.1", "interior": "demo-2"},
        {"name": EDGE_PODS[1], "ready": False, "message": "not connected to an interior router yet"}]}],
}


@pytest.fixture
def namespace(kube_apiserver: ControlPlane) -> str:
    install_crds(kube_apiserver)
    name = f"qdstat-edges-{uuid.uuid4().hex[:8]}"
    make_namespace(kube_apiserver, name)
    return name


def _mesh_with_edges(plane: ControlPlane, namespace: str) -> None:
    from kubernetes import client

    api = client.CustomObjectsApi(plane.api_client())
    api.create_namespaced_custom_object("qdmesh.io", "v1alpha1", namespace, "routermeshes", {
        "apiVersion": "qdmesh.io/v1alpha1", "kind": "RouterMesh", "metadata": {"name": "demo"},
        "spec": {"size": 3, "edgeGroups": [{"name": "apps", "size": 3}]}})
    api.patch_namespaced_custom_object_status("qdmesh.io", "v1alpha1", namespace, "routermeshes", "demo",
                                              {"status": STATUS})
    core = client.CoreV1Api(plane.api_client())
    for name in EDGE_PODS:
        core.create_namespaced_pod(namespace, client.V1Pod(
            metadata=client.V1ObjectMeta(name=name, labels={
                "app.kubernetes.io/name": "qdmesh-router", "qdmesh.io/edge-of": "demo",
                "qdmesh.io/edge-group": "apps"}),
            spec=client.V1PodSpec(automount_service_account_token=False, containers=[client.V1Container(
                name="router", image="qdmesh/router:0.1.0")])))
        core.patch_namespaced_pod_status(name, namespace, {"status": {
            "phase": "Running", "podIP": "10.1.0.9",
            "conditions": [{"type": "Ready", "status": "True",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})


def run(capsys: pytest.CaptureFixture, argv: List[str], forward: FakePortForward | None = None
        ) -> Tuple[int, str, str]:
    code = main(argv, forwarder_factory=forward)
    out, err = capsys.readouterr()
    return code, out, err


def test_edges_lists_each_edge_router_and_its_interior_router(
        kube_apiserver: ControlPlane, namespace: str, capsys: pytest.CaptureFixture) -> None:
    _mesh_with_edges(kube_apiserver, namespace)
    base = ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "demo", "--edge-routers"]
    forward = FakePortForward({})
    code, out, err = run(capsys, base, forward)
    assert code == 0, err
    assert forward.opened == []  # from the status: no port-forward
    lines = out.splitlines()
    assert lines[0] == "edge routers connected: 1/3 (apps: 1/3 (Deployment))"
    assert lines[1] == "Edge Routers"
    assert lines[2].split() == ["group", "pod", "state", "node", "router-id", "interior", "connected",
                                "message"]
    assert lines[4].split() == ["apps", EDGE_PODS[0], "ready", "n1", "Router.a.1", "demo-2", "yes"]
    code, out, _ = run(capsys, [*base, "--json"])
    rows = json.loads(out)
    assert [r["interior"] for r in rows] == ["demo-2", "-"] and rows[1]["connected"] == "no"


def test_edges_of_a_mesh_without_edge_groups_is_a_clear_error(
        kube_apiserver: ControlPlane, namespace: str, capsys: pytest.CaptureFixture) -> None:
    from .kubeobjects import create_mesh

    create_mesh(kube_apiserver, namespace)
    argv = ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "demo", "--edge-routers"]
    code, _, err = run(capsys, argv)
    assert code == 1 and "RouterMesh 'demo' has no edge groups (spec.edgeGroups)" in err


def test_an_edge_router_is_a_target_like_any_router(
        kube_apiserver: ControlPlane, namespace: str, local_mesh: LocalMesh,
        capsys: pytest.CaptureFixture) -> None:
    _mesh_with_edges(kube_apiserver, namespace)
    # The fake port-forward leads the edge pod to a real (interior) router process: what is
    # tested is that the plugin finds and targets the edge pod.
    addresses = {EDGE_PODS[0]: local_mesh.addresses[PODS[2]]}
    base = ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace]
    forward = FakePortForward(addresses)
    code, out, err = run(capsys, [*base, "demo", "--router", EDGE_PODS[0], "-g"], forward)
    assert code == 0, err
    assert forward.opened == [EDGE_PODS[0]] and EDGE_PODS[0] in out
    forward = FakePortForward(addresses)
    code, out, err = run(capsys, [*base, f"pod/{EDGE_PODS[0]}", "-l"], forward)
    assert code == 0, err
    assert forward.opened == [EDGE_PODS[0]]
    code, _, err = run(capsys, [*base, "demo", "--router", "demo-edge-apps-nope"], FakePortForward({}))
    assert code == 1 and EDGE_PODS[0] in err and "is not a router of RouterMesh 'demo'" in err
