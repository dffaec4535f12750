"""Secrets the operator does not write but the routers read at start (listener and connector
TLS, the inter-router Secret of modes Secret and CertManager, SASL passwords): a change of
their content rolls the routers, against a REAL API server."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import pytest

from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.reconcile import MeshReconciler
from qdmesh_operator.render.manifests import MOUNTED_SECRETS_ANNOTATION
from qdmesh_operator.tls.mounted import mounted
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster(crds: ControlPlane) -> Tuple[Any, str]:
    return api_namespace(crds, "sec")


def test_what_the_routers_read_from_secrets() -> None:
    spec = {"size": 1, "interRouter": {"tls": {"mode": "CertManager", "issuerRef": {"name": "ca"}}},
            "listeners": [{"name": "amqps", "port": 5671, "tlsSecretName": "amqps"}],
            "connectors": [{"name": "broker", "host": "b", "port": 5672, "tlsSecretName": "amqps",
                            "saslUsername": "u", "saslPasswordSecretRef": {"name": "creds", "key": "pw"}}]}
    assert mounted(parse_mesh("m", "ns", spec)) == [("amqps", None), ("creds", "pw"),
                                                     ("m-inter-router-tls", None)]
    managed = {"size": 1, "listeners": spec["listeners"]}  # mode Managed: tracked by its own revision
    assert mounted(parse_mesh("m", "ns", managed)) == [("amqps", None)]


def test_a_renewed_listener_secret_rolls_the_routers(cluster: Tuple[Any, str]) -> None:
    """Secrets the operator does not write (here a listener's TLS Secret, as cert-manager
    renews it) are read by routers only at start: a change of their content rolls them."""
    from kubernetes import client

    api, ns = cluster
    core = client.CoreV1Api(api)
    core.create_namespaced_secret(ns, {"metadata": {"name": "amqps"}, "type": "Opaque",
                                       "stringData": {"tls.crt": "one", "tls.key": "k"}})
    spec = {"size": 2, "image": "qdmesh/router:0.1.0", "interRouter": {"tls": {"mode": "Disabled"}},
            "listeners": [{"name": "amqps", "port": 5671, "tlsSecretName": "amqps"}]}
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        G, V, ns, "routermeshes", {"apiVersion": f"{G}/{V}", "kind": "RouterMesh",
                                   "metadata": {"name": "eps"}, "spec": spec})
    reconciler = MeshReconciler(KubeApi(api), urls=lambda mesh, pods: {})
    apps = client.AppsV1Api(api)

    def template_annotations() -> Dict[str, str]:
        return dict(apps.read_namespaced_stateful_set("eps", ns).spec.template.metadata.annotations)

    reconciler.reconcile(ns, "eps")
    first = template_annotations()[MOUNTED_SECRETS_ANNOTATION]
    again = reconciler.reconcile(ns, "eps")
    assert template_annotations()[MOUNTED_SECRETS_ANNOTATION] == first
    assert not [e for e in again.events if e.reason == "RollingRestart"]

    core.patch_namespaced_secret("amqps", ns, {"stringData": {"tls.crt": "two"}})
    report = reconciler.reconcile(ns, "eps")
    assert template_annotations()[MOUNTED_SECRETS_ANNOTATION] != first
    rolling = [e.message for e in report.events if e.reason == "RollingRestart"]
    assert rolling and "restarting router 1 first" in rolling[0], report.events
    sts = apps.read_namespaced_stateful_set("eps", ns)
    assert sts.spec.update_strategy.rolling_update.partition == 1
