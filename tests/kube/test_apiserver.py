"""The real API server fixture: namespaces, CRDs with CEL validation, and the controllers."""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Dict

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .controlplane import ControlPlane

pytestmark = pytest.mark.timeout(180)

GROUP = "test.qdmesh.io"


def _eventually(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def _widget_crd(plural: str) -> Dict[str, Any]:
    spec_schema = {
        "type": "object",
        "required": ["replicas"],
        "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
        ],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural[:-1], "kind": plural.capitalize()[:-1]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
            }],
        },
    }


def _established(api: Any, name: str) -> bool:
    conditions = api.read_custom_resource_definition(name).status.conditions or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


@pytest.fixture
def namespace(kube_apiserver: ControlPlane) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    core: Any = client.CoreV1Api(kube_apiserver.api_client())
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def test_namespace_created_and_listed(kube_apiserver: ControlPlane, namespace: str) -> None:
    core: Any = client.CoreV1Api(kube_apiserver.api_client())
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert namespace in names
    assert "default" in names


def test_server_reports_built_version(kube_apiserver: ControlPlane) -> None:
    info: Any = client.VersionApi(kube_apiserver.api_client()).get_code()
    assert info.git_version.startswith("v1.36.")


def test_crd_established_and_cel_rule_refuses_bad_object(
        kube_apiserver: ControlPlane, namespace: str) -> None:
    api_client = kube_apiserver.api_client()
    extensions: Any = client.ApiextensionsV1Api(api_client)
    plural = f"widgets{uuid.uuid4().hex[:6]}"
    crd = _widget_crd(plural)
    extensions.create_custom_resource_definition(crd)
    _eventually(lambda: _established(extensions, crd["metadata"]["name"]), 30, "CRD Established")

    objects: Any = client.CustomObjectsApi(api_client)
    kind = crd["spec"]["names"]["kind"]

    def create(name: str, spec: Dict[str, Any]) -> Any:
        body = {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}
        return objects.create_namespaced_custom_object(GROUP, "v1", namespace, plural, body)

    # A freshly established CRD may take a moment to be served for writes.
    _eventually(lambda: _try(lambda: create("good", {"replicas": 2, "maxReplicas": 3})), 30, "create")
    stored = objects.get_namespaced_custom_object(GROUP, "v1", namespace, plural, "good")
    assert stored["spec"]["replicas"] == 2

    with pytest.raises(ApiException) as refused:
        create("bad", {"replicas": 5, "maxReplicas": 3})
    assert refused.value.status == 422
    assert "replicas must not exceed maxReplicas" in str(refused.value.body)

    with pytest.raises(ApiException) as missing:
        create("incomplete", {"maxReplicas": 3})
    assert missing.value.status == 422
    assert "spec.replicas" in str(missing.value.body)


def _try(action: Callable[[], Any]) -> bool:
    try:
        action()
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def test_garbage_collector_deletes_owned_objects(kube_control_plane: ControlPlane, namespace: str) -> None:
    core: Any = client.CoreV1Api(kube_control_plane.api_client())
    owner = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner")))
    reference = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner",
                                        uid=owner.metadata.uid)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="owned", owner_references=[reference])))
    core.delete_namespaced_config_map("owner", namespace)

    def owned_gone() -> bool:
        return "owned" not in {cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items}

    _eventually(owned_gone, 60, "garbage collection of the owned ConfigMap")


def test_statefulset_controller_creates_pods(kube_control_plane: ControlPlane, namespace: str) -> None:
    api_client = kube_control_plane.api_client()
    labels = {"app": "sts-test"}
    statefulset = client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1StatefulSetSpec(
            replicas=2, service_name="web", pod_management_policy="Parallel",
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="qdmesh/none:0")]),
            ),
        ),
    )
    apps: Any = client.AppsV1Api(api_client)
    apps.create_namespaced_stateful_set(namespace, statefulset)
    core: Any = client.CoreV1Api(api_client)

    def pods_created() -> bool:
        names = {p.metadata.name for p in core.list_namespaced_pod(namespace).items}
        return names == {"web-0", "web-1"}

    _eventually(pods_created, 60, "StatefulSet pods web-0 and web-1")
