"""Objects kubectl-qdstat's tests put into the real API server: the qdmesh CRDs, a RouterMesh,
router pods whose status says Running/Ready (there is no kubelet, so the test writes it), and a
user who may read pods but not port-forward."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List

import yaml

from tests.kube import pki
from tests.kube.controlplane import ControlPlane

REPO = Path(__file__).resolve().parents[2]
MESH_LABELS = {"app.kubernetes.io/name": "qdmesh-router", "qdmesh.io/mesh": "demo"}


def install_crds(plane: ControlPlane) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    ext = client.ApiextensionsV1Api(plane.api_client())
    for path in sorted((REPO / "crds").glob("qdmesh.io_*.yaml")):
        body = yaml.safe_load(path.read_text())
        try:
            ext.create_custom_resource_definition(body)
        except ApiException as e:
            if e.status != 409:
                raise
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = ext.read_custom_resource_definition("routermeshes.qdmesh.io")
        if any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []):
            return
        time.sleep(0.2)
    raise AssertionError("RouterMesh CRD not established within 30 s")


def make_namespace(plane: ControlPlane, name: str) -> None:
    from kubernetes import client

    core = client.CoreV1Api(plane.api_client())
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    # Without controllers nobody makes the default ServiceAccount that pods are admitted with;
    # with them (the session control plane may run a controller-manager) it may exist already.
    try:
        core.create_namespaced_service_account(name, client.V1ServiceAccount(
            metadata=client.V1ObjectMeta(name="default")))
    except client.exceptions.ApiException as error:
        if error.status != 409:
            raise


def create_mesh(plane: ControlPlane, namespace: str, name: str = "demo", size: int = 3,
                ready: Dict[str, Any] | None = None) -> None:
    from kubernetes import client

    api = client.CustomObjectsApi(plane.api_client())
    api.create_namespaced_custom_object("qdmesh.io", "v1alpha1", namespace, "routermeshes", {
        "apiVersion": "qdmesh.io/v1alpha1", "kind": "RouterMesh",
        "metadata": {"name": name}, "spec": {"size": size}})
    if ready is not None:
        api.patch_namespaced_custom_object_status("qdmesh.io", "v1alpha1", namespace, "routermeshes", name,
                                                  {"status": {"conditions": [ready]}})


def create_router_pods(plane: ControlPlane, namespace: str, names: List[str], running: bool) -> None:
    from kubernetes import client

    core = client.CoreV1Api(plane.api_client())
    for name in names:
        core.create_namespaced_pod(namespace, client.V1Pod(
            metadata=client.V1ObjectMeta(name=name, labels=MESH_LABELS),
            spec=client.V1PodSpec(automount_service_account_token=False, containers=[client.V1Container(
                name="router", image="qdmesh/router:0.1.0",
                ports=[client.V1ContainerPort(container_port=5672, name="amqp")])])))
        if running:
            now = "2026-01-01T00:00:00Z"
            core.patch_namespaced_pod_status(name, namespace, {"status": {
                "phase": "Running", "podIP": "10.1.0.1",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}})


def viewer_kubeconfig(plane: ControlPlane, namespace: str, path: Path) -> Path:
    """A kubeconfig with two contexts: 'admin' and 'viewer' (may get/list pods and RouterMeshes
    in ``namespace``, but not port-forward)."""
    from kubernetes import client

    directory = Path(plane.kubeconfig).parent / "pki"
    if not (directory / "viewer.crt").exists():
        pki._signed_cert(directory, "viewer", "/CN=viewer",
                         "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                         "extendedKeyUsage=clientAuth\n")
    rbac = client.RbacAuthorizationV1Api(plane.api_client())
    rbac.create_namespaced_role(namespace, client.V1Role(
        metadata=client.V1ObjectMeta(name="viewer"),
        rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"]),
               client.V1PolicyRule(api_groups=["qdmesh.io"], resources=["routermeshes"], verbs=["get"])]))
    rbac.create_namespaced_role_binding(namespace, client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="viewer"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="viewer"),
        subjects=[client.RbacV1Subject(kind="User", name="viewer", api_group="rbac.authorization.k8s.io")]))
    config = yaml.safe_load(Path(plane.kubeconfig).read_text())
    cluster = config["clusters"][0]["name"]
    config["users"].append({"name": "viewer", "user": {
        "client-certificate": str(directory / "viewer.crt"), "client-key": str(directory / "viewer.key")}})
    config["contexts"] = [
        {"name": "admin", "context": {"cluster": cluster, "user": config["users"][0]["name"]}},
        {"name": "viewer", "context": {"cluster": cluster, "user": "viewer", "namespace": namespace}},
    ]
    config["current-context"] = "admin"
    path.write_text(yaml.safe_dump(config))
    return path
