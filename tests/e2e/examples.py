"""docs/examples in the cluster: the files applied as they are (server-side apply, as
``kubectl apply --server-side -f`` would), RabbitMQ brokers (images/e2e-broker) behind the
Services the examples name, and the waits their scenarios share."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml
from kubernetes import client

from .product import REPO, apply_resource, apps_api, is_true, read_resource

EXAMPLES = REPO / "docs" / "examples"
PLURALS = {"RouterMesh": "routermeshes", "LinkRoute": "linkroutes", "AutoLink": "autolinks",
           "VhostPolicy": "vhostpolicies"}


def example_documents(name: str) -> List[Dict[str, Any]]:
    """The custom resources of docs/examples/NAME.yaml, in file order."""
    path: Path = EXAMPLES / f"{name}.yaml"
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def apply_example(k8s: Any, namespace: str, name: str) -> List[Tuple[str, str]]:
    """Apply every resource of the example into ``namespace``, unchanged; returns (plural, name)
    of each."""
    applied = []
    for doc in example_documents(name):
        plural = PLURALS[doc["kind"]]
        apply_resource(k8s, namespace, plural, doc["kind"], doc["metadata"]["name"], doc["spec"])
        applied.append((plural, doc["metadata"]["name"]))
    return applied


def deploy_broker(k8s: Any, core: Any, namespace: str, name: str, image: str) -> None:
    """A RabbitMQ Deployment and a Service, both called ``name``, AMQP 1.0 on port 5672."""
    labels = {"app": name}
    container = client.V1Container(
        name="rabbitmq", image=image, image_pull_policy="Never",
        ports=[client.V1ContainerPort(container_port=5672, name="amqp")],
        readiness_probe=client.V1Probe(tcp_socket=client.V1TCPSocketAction(port=5672),
                                       period_seconds=2, failure_threshold=60))
    apps_api(k8s).create_namespaced_deployment(namespace, client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels),
                                              spec=client.V1PodSpec(containers=[container])))))
    core.create_namespaced_service(namespace, client.V1Service(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1ServiceSpec(selector=labels,
                                  ports=[client.V1ServicePort(name="amqp", port=5672, target_port=5672)])))


def broker_ready(k8s: Any, namespace: str, name: str) -> bool:
    dep = apps_api(k8s).read_namespaced_deployment(name, namespace)
    return (dep.status.ready_replicas or 0) == 1


def mesh_ready(k8s: Any, namespace: str, mesh: str, size: int) -> bool:
    obj = read_resource(k8s, namespace, "routermeshes", mesh)
    return is_true(obj, "Ready") and is_true(obj, "MeshConverged") and \
        (obj.get("status") or {}).get("readyRouters") == size


def autolink_active(k8s: Any, namespace: str, name: str, size: int) -> bool:
    """Ready, with the link active on each of the mesh's ``size`` routers (its status)."""
    obj = read_resource(k8s, namespace, "autolinks", name)
    routers = (obj.get("status") or {}).get("routers") or []
    return is_true(obj, "Ready") and len(routers) == size and \
        all(r.get("operStatus") == "active" for r in routers)
