"""Edge groups against a REAL API server (tests/kube: no kubelet, so no pod ever runs): the
objects of each group and their removal, the edge routers' certificate issued by the mesh's
CA and held back in a CA rotation until the edge routers run the step before, the status
(edgesReady), and the CRD's CEL rules refusing bad groups with messages naming the field."""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from typing import Any, Dict, Tuple

import pytest

from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.reconcile import MeshReconciler
from qdmesh_operator.tls import certs
from qdmesh_operator.tls.rotation import ROTATE_BEFORE
from qdmesh_operator.tls.secrets import ensure_managed_tls
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace
from tests.operator.test_operator_managed_tls import openssl_verify

pytestmark = pytest.mark.timeout(180)

GROUPS = [{"name": "apps", "size": 3}, {"name": "nodes", "perNode": True}]


@pytest.fixture(scope="module")
def cluster(crds: ControlPlane) -> Tuple[Any, str]:
    return api_namespace(crds, "edges")


def _create(api: Any, namespace: str, name: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    from kubernetes import client

    body = {"apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": name}, "spec": spec}
    return dict(client.CustomObjectsApi(api).create_namespaced_custom_object(G, V, namespace, "routermeshes",
                                                                              body))


def _patch(api: Any, namespace: str, name: str, spec: Dict[str, Any]) -> None:
    from kubernetes import client

    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        G, V, namespace, "routermeshes", name, {"spec": spec}, _content_type="application/merge-patch+json")


def _data(api: Any, namespace: str, name: str) -> Dict[str, bytes]:
    from kubernetes import client

    secret = client.CoreV1Api(api).read_namespaced_secret(name, namespace)
    return {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}


def test_edge_groups_get_their_objects_certificate_and_status(cluster: Tuple[Any, str],
                                                             tmp_path: Any) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api, ns = cluster
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    _create(api, ns, "alpha", {"size": 3, "image": "qdmesh/router:0.1.0", "edgeGroups": GROUPS})
    reconciler = MeshReconciler(KubeApi(api), urls=lambda mesh, pods: {})
    report = reconciler.reconcile(ns, "alpha")
    issued = [e.message for e in report.events if e.reason == "CertificateIssued"]
    assert any("alpha-edge-tls" in m and "edge routers' certificate" in m for m in issued), issued

    cm = core.read_namespaced_config_map("alpha-config", ns)
    assert sorted(cm.data) == ["alpha-0.conf", "alpha-1.conf", "alpha-2.conf", "edge-apps.conf",
                               "edge-nodes.conf"]
    assert "mode: edge" in cm.data["edge-apps.conf"] and "qdmesh/edgeListener/edge" in cm.data["alpha-0.conf"]
    deployment = apps.read_namespaced_deployment("alpha-edge-apps", ns)
    assert deployment.spec.replicas == 3
    assert deployment.metadata.owner_references[0].name == "alpha"
    daemon_set = apps.read_namespaced_daemon_set("alpha-edge-nodes", ns)
    assert daemon_set.spec.template.metadata.labels["qdmesh.io/edge-group"] == "nodes"
    assert core.read_namespaced_service("alpha-edge-nodes", ns).spec.internal_traffic_policy == "Local"
    assert core.read_namespaced_service("alpha-edge-apps", ns).spec.internal_traffic_policy == "Cluster"
    budget = client.PolicyV1Api(api).read_namespaced_pod_disruption_budget("alpha-edge-apps", ns)
    assert budget.spec.max_unavailable == 1
    assert budget.spec.selector.match_labels == {"qdmesh.io/edge-of": "alpha", "qdmesh.io/edge-group": "apps"}

    # The edge routers' certificate comes from the mesh's CA, like the interior routers'.
    ca, edge = _data(api, ns, "alpha-inter-router-ca"), _data(api, ns, "alpha-edge-tls")
    assert edge["ca.crt"] == ca["ca.crt"]
    verified = openssl_verify(tmp_path, certs.KeyPair(ca["ca.crt"], b""), certs.KeyPair(edge["tls.crt"], b""))
    assert "OK" in verified, verified
    # Edge routers load it at run time: nothing of it is in the pod template.
    assert "qdmesh.io/inter-router-cert" not in deployment.spec.template.metadata.annotations

    status = report.statuses[("routermeshes", "alpha")]
    assert (status["edges"], status["readyEdges"], status["edgesReady"]) == (3, 0, "0/3")
    assert [g["name"] for g in status["edgeGroups"]] == ["apps", "nodes"]
    assert status["conditions"][0]["status"] == "False"

    # The group's size scales its Deployment; a group left out of the spec goes.
    _patch(api, ns, "alpha", {"edgeGroups": [{"name": "apps", "size": 6}]})
    report = reconciler.reconcile(ns, "alpha")
    assert apps.read_namespaced_deployment("alpha-edge-apps", ns).spec.replicas == 6
    assert [e.message for e in report.events if e.reason == "EdgeGroupRemoved"] == [
        "edge group nodes removed (DaemonSet alpha-edge-nodes, its Service and PodDisruptionBudget)"]
    policy = client.PolicyV1Api(api)
    for read in (apps.read_namespaced_daemon_set, core.read_namespaced_service,
                 policy.read_namespaced_pod_disruption_budget):
        with pytest.raises(ApiException) as caught:
            read("alpha-edge-nodes", ns)
        assert caught.value.status == 404
    assert "edge-nodes.conf" not in core.read_namespaced_config_map("alpha-config", ns).data

    # A group that changes from size to perNode changes from a Deployment to a DaemonSet.
    _patch(api, ns, "alpha", {"edgeGroups": [{"name": "apps", "perNode": True}]})
    report = reconciler.reconcile(ns, "alpha")
    assert [e.message for e in report.events if e.reason == "EdgeGroupReplaced"] == [
        "edge group apps is now a DaemonSet: its Deployment alpha-edge-apps removed"]
    daemon_set = apps.read_namespaced_daemon_set("alpha-edge-apps", ns)
    assert daemon_set.metadata.labels["qdmesh.io/edge-group"] == "apps"
    with pytest.raises(ApiException) as caught:
        apps.read_namespaced_deployment("alpha-edge-apps", ns)
    assert caught.value.status == 404
    assert core.read_namespaced_service("alpha-edge-apps", ns).spec.internal_traffic_policy == "Local"


def test_mesh_without_edge_groups_has_no_edge_objects_or_status(cluster: Tuple[Any, str]) -> None:
    from kubernetes import client

    api, ns = cluster
    _create(api, ns, "plain", {"size": 1, "image": "qdmesh/router:0.1.0"})
    report = MeshReconciler(KubeApi(api), urls=lambda mesh, pods: {}).reconcile(ns, "plain")
    status = report.statuses[("routermeshes", "plain")]
    assert "edgesReady" not in status and "edgeGroups" not in status
    selector = "qdmesh.io/edge-of=plain"
    assert client.AppsV1Api(api).list_namespaced_deployment(ns, label_selector=selector).items == []
    core = client.CoreV1Api(api)
    secrets = [s.metadata.name for s in core.list_namespaced_secret(ns).items]
    assert "plain-edge-tls" not in secrets


def test_ca_rotation_waits_for_edge_routers_too(cluster: Tuple[Any, str]) -> None:
    from kubernetes import client

    api, ns = cluster
    core = client.CoreV1Api(api)
    mesh = parse_mesh("rot", ns, {"size": 2, "edgeGroups": [{"name": "apps", "size": 2}]})
    first = ensure_managed_tls(core, mesh, owner=None)
    assert first.edge_revision is not None
    expires = certs.load_cert(_data(api, ns, "rot-inter-router-ca")["ca.crt"], "ca").not_valid_after_utc
    # Years later, both certificates have been renewed by the same CA on the way.
    early = expires - ROTATE_BEFORE - dt.timedelta(days=1)
    first = ensure_managed_tls(core, mesh, owner=None, now=early, running=first.revision,
                               running_edges=[first.edge_revision])
    assert [e[1] for e in first.events] == ["CertificateRenewed", "CertificateRenewed"], first.events
    due = expires - ROTATE_BEFORE + dt.timedelta(days=1)
    # Step 1 only adds trust, so it needs no rollout: the edge routers' Secret trusts the next
    # CA too, which changes their revision (their pods roll to load it).
    step1 = ensure_managed_tls(core, mesh, owner=None, now=due, running=first.revision, running_edges=[None])
    assert [e[1] for e in step1.events] == ["CARotationStarted"], step1.events
    ca1 = _data(api, ns, "rot-inter-router-ca")
    assert ca1["next-ca.crt"] in _data(api, ns, "rot-edge-tls")["ca.crt"]
    assert step1.edge_revision != first.edge_revision
    # The interior routers run step 1, the edge group is still rolling: step 2 waits.
    held = ensure_managed_tls(core, mesh, owner=None, now=due, running=step1.revision, running_edges=[None])
    assert [e[1] for e in held.events if e[1].startswith("CA")] == []
    # Step 2 waits for the edge routers to run step 1's trust.
    held = ensure_managed_tls(core, mesh, owner=None, now=due, running=step1.revision,
                              running_edges=[first.edge_revision])
    assert [e[1] for e in held.events if e[1].startswith("CA")] == []
    step2 = ensure_managed_tls(core, mesh, owner=None, now=due, running=step1.revision,
                               running_edges=[step1.edge_revision])
    assert [e[1] for e in step2.events] == ["CARotated", "CertificateRenewed", "CertificateRenewed"]
    assert "edge routers' certificate" in step2.events[2][2]


@pytest.mark.parametrize("groups, message", [
    ([{"name": "a"}], "spec.edgeGroups: each group needs exactly one of size"),
    ([{"name": "a", "size": 2, "perNode": True}], "spec.edgeGroups: each group needs exactly one of size"),
    ([{"name": "Apps", "size": 2}], "spec.edgeGroups[].name must be lower-case letters"),
    ([{"name": "a", "size": 1}, {"name": "a", "size": 2}], "Duplicate value"),
    ([{"name": "a" * 17, "size": 1}], "spec.edgeGroups[0].name: Too long"),
    ([{"name": "a", "size": 1001}], "spec.edgeGroups[0].size"),
])
def test_cel_and_schema_refuse_bad_edge_groups_naming_the_field(
        cluster: Tuple[Any, str], groups: Any, message: str) -> None:
    from kubernetes.client.rest import ApiException

    api, ns = cluster
    with pytest.raises(ApiException) as caught:
        _create(api, ns, f"bad-{uuid.uuid4().hex[:6]}", {"edgeGroups": groups})
    assert caught.value.status == 422
    assert message in json.loads(caught.value.body)["message"]
