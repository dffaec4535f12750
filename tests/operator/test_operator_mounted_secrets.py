"""Secrets the operator does not write but the routers read (listener and connector TLS, the
inter-router Secret of modes Secret and CertManager, SASL passwords), against a REAL API
server: renewed TLS material is loaded at run time (no roll); a changed SASL password, which
a router reads only at start, rolls the routers."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import pytest

from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.reconcile import MeshReconciler
from qdmesh_operator.render.manifests import MOUNTED_SECRETS_ANNOTATION
from qdmesh_operator.tls.live import interior_secrets
from qdmesh_operator.tls.mounted import password_keys
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
    mesh = parse_mesh("m", "ns", spec)
    assert interior_secrets(mesh) == {"inter-router-tls": "m-inter-router-tls", "qdmesh/tls/amqps": "amqps"}
    assert password_keys(mesh) == [("creds", "pw")]
    managed = {"size": 1, "listeners": spec["listeners"]}
    assert interior_secrets(parse_mesh("m", "ns", managed)) == {"inter-router-tls": "m-inter-router-tls",
                                                                "qdmesh/tls/amqps": "amqps"}


def test_a_renewed_listener_secret_does_not_roll_but_a_changed_password_does(
        cluster: Tuple[Any, str]) -> None:
    """A listener's TLS Secret renewed (as cert-manager renews it) is loaded by the running
    routers (tls/live.py): the pod template stays as it is.  A broker's SASL password reaches a
    router through its environment, at start: a change rolls the routers one at a time."""
    from kubernetes import client

    api, ns = cluster
    core = client.CoreV1Api(api)
    core.create_namespaced_secret(ns, {"metadata": {"name": "amqps"}, "type": "Opaque",
                                       "stringData": {"tls.crt": "one", "tls.key": "k"}})
    core.create_namespaced_secret(ns, {"metadata": {"name": "creds"}, "type": "Opaque",
                                       "stringData": {"pw": "secret-1"}})
    spec = {"size": 2, "image": "qdmesh/router:0.1.0", "interRouter": {"tls": {"mode": "Disabled"}},
            "listeners": [{"name": "amqps", "port": 5671, "tlsSecretName": "amqps"}],
            "connectors": [{"name": "broker", "host": "b", "port": 5672, "saslUsername": "u",
                            "saslPasswordSecretRef": {"name": "creds", "key": "pw"}}]}
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        G, V, ns, "routermeshes", {"apiVersion": f"{G}/{V}", "kind": "RouterMesh",
                                   "metadata": {"name": "eps"}, "spec": spec})
    reconciler = MeshReconciler(KubeApi(api), urls=lambda mesh, pods: {})
    apps = client.AppsV1Api(api)

    def template_annotations() -> Dict[str, str]:
        return dict(apps.read_namespaced_stateful_set("eps", ns).spec.template.metadata.annotations)

    reconciler.reconcile(ns, "eps")
    first = template_annotations()
    assert MOUNTED_SECRETS_ANNOTATION in first
    again = reconciler.reconcile(ns, "eps")
    assert template_annotations() == first
    assert not [e for e in again.events if e.reason == "RollingRestart"]

    core.patch_namespaced_secret("amqps", ns, {"stringData": {"tls.crt": "two"}})
    renewed = reconciler.reconcile(ns, "eps")
    assert template_annotations() == first
    assert not [e for e in renewed.events if e.reason == "RollingRestart"]
    assert apps.read_namespaced_stateful_set("eps", ns).spec.update_strategy.rolling_update.partition == 0

    core.patch_namespaced_secret("creds", ns, {"stringData": {"pw": "secret-2"}})
    report = reconciler.reconcile(ns, "eps")
    assert template_annotations()[MOUNTED_SECRETS_ANNOTATION] != first[MOUNTED_SECRETS_ANNOTATION]
    rolling = [e.message for e in report.events if e.reason == "RollingRestart"]
    assert rolling and "restarting router 1 first" in rolling[0], report.events
    sts = apps.read_namespaced_stateful_set("eps", ns)
    assert sts.spec.update_strategy.rolling_update.partition == 1
