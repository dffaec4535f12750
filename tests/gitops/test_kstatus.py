"""Flux's health assessment, out of the box: the real kstatus library (sigs.k8s.io/cli-utils, what
Flux's kustomize-controller and helm-controller run for `wait: true`), built from
tests/gitops/kstatus with Go, judging the statuses the operator writes and the objects a real API
server with the chart's CRDs returns before the operator has written anything."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any, Dict, List

import pytest

from qdmesh_operator.status import Verdict
from qdmesh_operator.status import kstatus as status
from tests.kube.controlplane import ControlPlane
from tests.prerequisites import require

HERE = Path(__file__).resolve().parent
KINDS = {"RouterMesh": "routermeshes", "LinkRoute": "linkroutes", "AutoLink": "autolinks",
         "VhostPolicy": "vhostpolicies"}


def go_binary() -> str | None:
    found = shutil.which("go")
    return found or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)


@pytest.fixture(scope="module")
def kstatus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = go_binary()
    require(go is not None, "Go (to build tests/gitops/kstatus; .ci/setup.d/30-helm-tools.sh installs it)")
    assert go is not None
    binary = tmp_path_factory.mktemp("kstatus") / "kstatus-check"
    # The first build downloads cli-utils and apimachinery through the Go module proxy.
    built = subprocess.run([go, "build", "-o", str(binary), "."], cwd=HERE / "kstatus", capture_output=True,
                           text=True, timeout=900)
    assert built.returncode == 0, built.stderr
    return binary


def assess(binary: Path, objects: List[Dict[str, Any]]) -> List[Dict[str, str]]:
    done = subprocess.run([str(binary)], input=json.dumps(objects), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    results: List[Dict[str, str]] = json.loads(done.stdout)
    return results


def resource(kind: str, generation: int, status_: Dict[str, Any] | None) -> Dict[str, Any]:
    obj: Dict[str, Any] = {"apiVersion": "qdmesh.io/v1alpha1", "kind": kind,
                           "metadata": {"name": "x", "namespace": "ns", "generation": generation}, "spec": {}}
    if status_ is not None:
        obj["status"] = status_
    return obj


@pytest.mark.parametrize("kind", KINDS)
def test_operator_statuses_read_as_flux_needs(kstatus: Path, kind: str) -> None:
    ready = Verdict.ready("3 routers ready, configuration live on every router")
    progressing = Verdict.progressing(status.ROUTERS_NOT_READY, "1/3 routers ready")
    stalled = Verdict.stalled(status.MESH_NOT_FOUND, "RouterMesh 'orders' not found in namespace 'ns'")
    results = assess(kstatus, [
        resource(kind, 2, status.status_of(ready, 2)),
        resource(kind, 2, status.status_of(progressing, 2)),
        resource(kind, 2, status.status_of(stalled, 2)),
        # The spec changed after the status was written: not done, whatever the status said.
        resource(kind, 3, status.status_of(ready, 2)),
    ])
    assert [r["status"] for r in results] == ["Current", "InProgress", "Failed", "InProgress"], results
    # Flux shows these messages in the Kustomization's or HelmRelease's own status.
    assert results[1]["message"] == "1/3 routers ready"
    assert results[2]["message"] == "RouterMesh 'orders' not found in namespace 'ns'"
    assert "generation is 3, but latest observed generation is 2" in results[3]["message"]


@pytest.mark.timeout(180)
def test_a_resource_the_operator_has_not_seen_is_in_progress(kstatus: Path,
                                                             kube_apiserver: ControlPlane) -> None:
    """Straight after `kubectl apply` (no operator here) the CRDs' status default makes every kind
    InProgress: with no status at all kstatus would call it Current and `wait: true` would pass.
    Once the operator's Ready status is written, the same object is Current."""
    from kubernetes import client

    from tests.kubectl.kubeobjects import install_crds

    install_crds(kube_apiserver)
    api: Any = client.CustomObjectsApi(kube_apiserver.api_client())
    suffix = uuid.uuid4().hex[:6]
    specs = {"RouterMesh": {"size": 1},
             "LinkRoute": {"meshRef": "m", "prefix": "orders.", "direction": "both", "containerId": "broker"},
             "AutoLink": {"meshRef": "m", "address": "queue.first", "direction": "in",
                          "containerId": "broker"},
             "VhostPolicy": {"meshRef": "m", "hostname": f"{suffix}.example.com"}}
    fresh, done = [], []
    for kind, plural in KINDS.items():
        name = f"kstatus-{suffix}"
        body = {"apiVersion": "qdmesh.io/v1alpha1", "kind": kind, "metadata": {"name": name},
                "spec": specs[kind]}
        api.create_namespaced_custom_object("qdmesh.io", "v1alpha1", "default", plural, body)
        created = api.get_namespaced_custom_object("qdmesh.io", "v1alpha1", "default", plural, name)
        assert created["status"] == {"observedGeneration": 0}, created.get("status")
        fresh.append(created)
        api.patch_namespaced_custom_object_status(
            "qdmesh.io", "v1alpha1", "default", plural, name,
            {"status": status.status_of(Verdict.ready("live"), created["metadata"]["generation"])},
            _content_type="application/merge-patch+json")
        done.append(api.get_namespaced_custom_object("qdmesh.io", "v1alpha1", "default", plural, name))
    assert [r["status"] for r in assess(kstatus, fresh)] == ["InProgress"] * len(KINDS)
    assert [r["status"] for r in assess(kstatus, done)] == ["Current"] * len(KINDS)
