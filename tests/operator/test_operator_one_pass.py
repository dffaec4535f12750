"""A reconciliation reads as one pass (the project guide's shape for reconcile.py): the stages
observe -> model -> tls -> desired -> render -> apply -> status each run once, in that order,
and none is entered again; the certificate Secrets' module is entered once.  Traced with
sys.setprofile over a real reconciliation against the API server (a mesh in mode Managed
with an edge group and a LinkRoute)."""

from __future__ import annotations

import sys
from typing import Any, List, Tuple

import pytest

from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.reconcile import MeshReconciler
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace

pytestmark = pytest.mark.timeout(120)

# status/lost.py once before tls: which routers' management to ask is read from the observed
# pods and the last status (was the control plane away, so routers on not-ready nodes may still
# answer); the status stage proper (status/compose.py) comes last.
STAGES = ["observe/cluster.py", "model/inputs.py", "apply/router_urls.py", "status/lost.py", "tls/resolve.py",
          # the mesh's MeshLinks (none here): their connectors for the desired state
          "links/observe.py", "desired/state.py",
          # each edge group's last manual-restart stamp (kept unless a new roll is asked for)
          "operations/annotations.py", "render/mesh.py",
          # apply: the mesh's management connections (taken, then trimmed to the routers reached)
          "apply/management.py", "apply/mesh.py", "apply/management.py",
          # which certificate revision every router runs (a CA rotation's next step waits for it)
          "apply/tls_reload.py",
          # canary: the next round of probes between the routers (on the drift schedule), summarised
          "canary/probe.py", "canary/summary.py",
          # status: composed, then what the API server already holds left unwritten
          "status/compose.py", "links/status.py", "status/unchanged.py"]


def _module(frame: Any) -> str:
    name = frame.f_code.co_filename
    return name.split("qdmesh_operator/", 1)[1] if "qdmesh_operator/" in name else ""


def _trace(reconciler: MeshReconciler, namespace: str, name: str) -> Tuple[List[str], int]:
    """(modules the orchestrator calls into, in order, consecutive repeats merged; how many
    times tls/secrets.py is entered from another module)."""
    entered: List[str] = []
    secrets_entries = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee, caller = _module(frame), _module(frame.f_back)
        if caller == "reconcile.py" and callee not in ("", "reconcile.py") and \
                (not entered or entered[-1] != callee):
            entered.append(callee)
        if callee == "tls/secrets.py" and caller != "tls/secrets.py":
            secrets_entries[0] += 1

    sys.setprofile(profile)
    try:
        reconciler.reconcile(namespace, name)
    finally:
        sys.setprofile(None)
    return entered, secrets_entries[0]


def test_each_stage_runs_once_in_order(crds: ControlPlane) -> None:
    from kubernetes import client

    api, ns = api_namespace(crds, "onepass")
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(G, V, ns, "routermeshes", {
        "apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": "m"},
        "spec": {"size": 2, "image": "qdmesh/router:0.1.0", "edgeGroups": [{"name": "apps", "size": 1}]}})
    custom.create_namespaced_custom_object(G, V, ns, "linkroutes", {
        "apiVersion": f"{G}/{V}", "kind": "LinkRoute", "metadata": {"name": "lr"},
        "spec": {"meshRef": "m", "prefix": "orders.", "containerId": "broker"}})
    # The first reconciliation makes the Secrets; the second finds them: trace both.
    for _ in range(2):
        entered, secrets_entries = _trace(MeshReconciler(KubeApi(api), urls=lambda mesh, pods: {}), ns, "m")
        assert entered == STAGES, " ".join(entered)
        assert secrets_entries == 1


def test_a_paused_mesh_is_observed_and_reported_only(crds: ControlPlane) -> None:
    """qdmesh.io/pause-reconciliation: no certificate, render or apply stage runs at all (none
    of them could then write anything), and nothing is read beyond the mesh and its routing
    resources."""
    from kubernetes import client

    api, ns = api_namespace(crds, "onepass-paused")
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(G, V, ns, "routermeshes", {
        "apiVersion": f"{G}/{V}", "kind": "RouterMesh",
        "metadata": {"name": "m", "annotations": {"qdmesh.io/pause-reconciliation": "true"}},
        "spec": {"size": 2, "image": "qdmesh/router:0.1.0"}})
    reconciler = MeshReconciler(KubeApi(api), urls=lambda mesh, pods: {})
    entered, secrets_entries = _trace(reconciler, ns, "m")
    assert entered == ["observe/cluster.py", "status/paused.py", "status/unchanged.py"], " ".join(entered)
    assert secrets_entries == 0
    assert client.AppsV1Api(api).list_namespaced_stateful_set(ns).items == []
    secrets = client.CoreV1Api(api).list_namespaced_secret(ns).items
    assert [s.metadata.name for s in secrets if s.metadata.name.startswith("m-")] == []
