"""kubectl-qdstat against a real Kubernetes API server: finding a RouterMesh's router pods, the
errors a user meets (mesh not found, not ready, RBAC forbids port-forward, port-forward fails),
kubectl's --context/--kubeconfig/-n, and a full run with the port-forward replaced by a fake
(there is no kubelet) that leads to real router processes."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import List, Tuple

import pytest

from qdmesh_kubectl.qdstat import main
from qdrouter.tools.qdstat_views import VIEWS
from tests.kube.controlplane import ControlPlane
from tests.prerequisites import require

from .fakes import FakePortForward
from .kubeobjects import (
    create_mesh,
    create_router_pods,
    install_crds,
    make_namespace,
    viewer_kubeconfig,
)
from .localmesh import PODS, LocalMesh

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def namespace(kube_apiserver: ControlPlane) -> str:
    install_crds(kube_apiserver)
    name = f"qdstat-{uuid.uuid4().hex[:8]}"
    make_namespace(kube_apiserver, name)
    return name


def run(capsys: pytest.CaptureFixture, argv: List[str], forward: FakePortForward | None = None
        ) -> Tuple[int, str, str]:
    code = main(argv, forwarder_factory=forward)
    out, err = capsys.readouterr()
    return code, out, err


def test_mesh_not_found(kube_apiserver: ControlPlane, namespace: str, capsys: pytest.CaptureFixture) -> None:
    code, out, err = run(capsys, ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "nope"])
    assert code == 1 and out == ""
    assert err.strip() == (f"kubectl-qdstat: error: RouterMesh 'nope' not found in namespace {namespace!r} "
                           f"(kubectl get routermeshes -n {namespace} lists them)")


def test_pod_not_found(kube_apiserver: ControlPlane, namespace: str, capsys: pytest.CaptureFixture) -> None:
    code, _, err = run(capsys, ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "pod/demo-7"])
    assert code == 1 and f"pod 'demo-7' not found in namespace {namespace!r}" in err


def test_mesh_without_pods_says_so_with_the_operators_reason(
        kube_apiserver: ControlPlane, namespace: str, capsys: pytest.CaptureFixture) -> None:
    create_mesh(kube_apiserver, namespace, ready={
        "type": "Ready", "status": "False", "reason": "Reconciling", "message": "creating the StatefulSet",
        "lastTransitionTime": "2026-01-01T00:00:00Z"})
    code, _, err = run(capsys, ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "demo"])
    assert code == 1
    assert "RouterMesh 'demo' has no router pods yet (Ready: Reconciling: creating the StatefulSet)" in err


def test_mesh_whose_pods_are_pending_is_not_ready(
        kube_apiserver: ControlPlane, namespace: str, capsys: pytest.CaptureFixture) -> None:
    create_mesh(kube_apiserver, namespace)
    create_router_pods(kube_apiserver, namespace, PODS, running=False)
    code, _, err = run(capsys, ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "demo", "-l"])
    assert code == 1
    assert ("RouterMesh 'demo' is not ready: no router pod is running "
            "(demo-0: pending, demo-1: pending, demo-2: pending)") in err


def test_rbac_forbidding_port_forward_is_named(
        kube_apiserver: ControlPlane, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    create_mesh(kube_apiserver, namespace)
    create_router_pods(kube_apiserver, namespace, PODS, running=True)
    kubeconfig = viewer_kubeconfig(kube_apiserver, namespace, tmp_path / "config")
    # The viewer context carries the namespace, so no -n is needed.
    forward = FakePortForward({})
    code, _, err = run(capsys, ["--kubeconfig", str(kubeconfig), "--context", "viewer", "demo"], forward)
    assert code == 1
    assert (f"RBAC forbids port-forward to pods in namespace {namespace!r}: kubectl qdstat needs 'create' "
            "on 'pods/portforward'") in err
    assert forward.opened == []


def test_viewer_may_not_read_meshes_elsewhere(
        kube_apiserver: ControlPlane, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    kubeconfig = viewer_kubeconfig(kube_apiserver, namespace, tmp_path / "config")
    argv = ["--kubeconfig", str(kubeconfig), "--context", "viewer", "-n", "default", "demo"]
    code, _, err = run(capsys, argv)
    assert code == 1 and "forbidden: reading RouterMesh 'demo' in namespace 'default'" in err


def test_real_kubectl_port_forward_failure_is_reported(
        kube_apiserver: ControlPlane, namespace: str, capsys: pytest.CaptureFixture) -> None:
    create_mesh(kube_apiserver, namespace)
    create_router_pods(kube_apiserver, namespace, PODS[:1], running=True)
    require(shutil.which("kubectl") is not None, "kubectl")
    # The pod says Running but no kubelet serves it: kubectl port-forward itself must fail.
    code, _, err = run(capsys, ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "demo"])
    assert code == 1
    assert "kubectl-qdstat: error: port-forward to pod 'demo-0' failed: " in err


def test_views_of_every_router_through_the_api_server(
        kube_apiserver: ControlPlane, namespace: str, local_mesh: LocalMesh,
        capsys: pytest.CaptureFixture) -> None:
    create_mesh(kube_apiserver, namespace)
    create_router_pods(kube_apiserver, namespace, PODS, running=True)
    forward = FakePortForward(local_mesh.addresses)
    base = ["--kubeconfig", kube_apiserver.kubeconfig, "--context", "qdmesh", "-n", namespace, "demo"]
    code, out, err = run(capsys, [*base, "--nodes"], forward)
    assert code == 0, err
    assert forward.opened == PODS and forward.closed
    lines = out.splitlines()
    assert lines[0] == "Routers in the Network"
    # qdstat's own columns (whatever they are: they are qdstat's business), after the router's.
    assert lines[1].split() == ["router", *VIEWS["nodes"].build([]).heads]
    assert "cost" in lines[1].split()
    # demo-1's rows: the two other routers it knows, and itself (next hop "(self)").
    assert sum(1 for line in lines[3:] if line.split()[0] == "demo-1") == 3

    forward = FakePortForward(local_mesh.addresses)
    code, out, _ = run(capsys, [*base, "--router", "2", "--json", "-g"], forward)
    assert code == 0 and '"demo-2"' in out and '"demo-0"' not in out

    code, out, _ = run(capsys, [*base, "--map"], FakePortForward(local_mesh.addresses))
    assert code == 0 and "demo-1 <-> demo-2  cost 4" in out


def test_one_pod_and_a_skipped_pending_router(
        kube_apiserver: ControlPlane, namespace: str, local_mesh: LocalMesh,
        capsys: pytest.CaptureFixture) -> None:
    create_mesh(kube_apiserver, namespace)
    create_router_pods(kube_apiserver, namespace, PODS[:2], running=True)
    create_router_pods(kube_apiserver, namespace, PODS[2:], running=False)
    base = ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace]
    code, out, err = run(capsys, [*base, "demo", "-c"], FakePortForward(local_mesh.addresses))
    assert code == 0
    assert "warning: skipping router demo-2 (pending)" in err
    assert {row[0] for row in _table(out, "Connections")} == {"demo-0", "demo-1"}
    assert {row[0] for row in _table(out, "Connectors")} == {"demo-0", "demo-1"}
    code, out, _ = run(capsys, [*base, "pod/demo-1", "--linkroutes"], FakePortForward(local_mesh.addresses))
    assert code == 0 and out.splitlines()[1].split()[0] == "router"


def _table(out: str, title: str) -> List[List[str]]:
    """The rows (split in columns) of the text table called ``title`` in ``out``."""
    lines = out.splitlines()
    start = lines.index(title) + 3  # title, heads, rule
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_connectors_under_the_connections_and_alone(
        kube_apiserver: ControlPlane, namespace: str, local_mesh: LocalMesh,
        capsys: pytest.CaptureFixture) -> None:
    """As qdstat: -c shows each router's connectors (state, last error) under its connections,
    --connectors shows them alone. demo-0 dials the broker, demo-1 demo-0, demo-2 both others."""
    create_mesh(kube_apiserver, namespace)
    create_router_pods(kube_apiserver, namespace, PODS, running=True)
    base = ["--kubeconfig", kube_apiserver.kubeconfig, "-n", namespace, "demo"]
    code, out, err = run(capsys, [*base, "-c"], FakePortForward(local_mesh.addresses))
    assert code == 0, err
    assert out.splitlines()[0] == "Connections"
    connectors = _table(out, "Connectors")
    per_router = {pod: sorted(row[1] for row in connectors if row[0] == pod) for pod in PODS}
    assert per_router["demo-0"] == ["broker"]
    assert len(per_router["demo-1"]) == 1 and len(per_router["demo-2"]) == 2, per_router
    assert all("Operational" in row for row in connectors), connectors

    code, out, _ = run(capsys, [*base, "--connectors", "--csv"], FakePortForward(local_mesh.addresses))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split(",")[:3] == ["router", "name", "host"]
    assert len(lines) == 1 + 4 and "Connections" not in out
