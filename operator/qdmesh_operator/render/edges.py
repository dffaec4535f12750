"""The Kubernetes objects of a mesh's edge groups (spec.edgeGroups), as plain dicts for
server-side apply: per group a Deployment (``size``) or a DaemonSet (``perNode``) of edge
routers, and a client Service.

A per-node group's Service has ``internalTrafficPolicy: Local``: a client pod that connects to
it reaches the edge router on its own node, and only that one (kube-proxy never sends the
connection to another node).  Chosen over hostPort or hostNetwork because it needs no
privilege, no free port on the node, and keeps the router pods' network namespace their own;
the price is that a client on a node whose edge router is not ready cannot connect until it
is (which is what a per-node router promises: the client's traffic stays on its node)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from .. import contract
from ..desired.state import EDGE_TLS_DIR
from ..model.mesh import EdgeGroupSpec, MeshSpec
from ..operations import RESTARTED_AT_ANNOTATION
from ..tls.names import CERT_ANNOTATION, edge_secret
from .manifests import RESTART_HASH_ANNOTATION, drain_env, router_command

EDGE_CERT_ANNOTATION = CERT_ANNOTATION  # what earlier operators wrote: carried, never changed


def _metadata(mesh: MeshSpec, group: EdgeGroupSpec, owner: Dict[str, Any] | None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": contract.edge_group(mesh.name, group.name), "namespace": mesh.namespace,
                            "labels": contract.edge_labels(mesh.name, group.name)}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return meta


def edge_service(mesh: MeshSpec, group: EdgeGroupSpec, owner: Dict[str, Any] | None) -> Dict[str, Any]:
    spec: Dict[str, Any] = {"type": "ClusterIP", "selector": contract.edge_selector(mesh.name, group.name),
                            "ports": [{"name": "amqp", "port": contract.AMQP_PORT, "targetPort": "amqp",
                                       "protocol": "TCP"}]}
    if group.per_node:
        spec["internalTrafficPolicy"] = "Local"
    return {"apiVersion": "v1", "kind": "Service", "metadata": _metadata(mesh, group, owner), "spec": spec}


def _pod_template(mesh: MeshSpec, group: EdgeGroupSpec, pod_annotations: Mapping[str, str],
                  restarted_at: str | None = None) -> Dict[str, Any]:
    mounts: List[Dict[str, Any]] = [{"name": "config", "mountPath": contract.CONFIG_DIR, "readOnly": True}]
    volumes: List[Dict[str, Any]] = [{"name": "config",
                                      "configMap": {"name": contract.config_map(mesh.name)}}]
    secret = edge_secret(mesh)
    if secret:
        mounts.append({"name": "edge-tls", "mountPath": EDGE_TLS_DIR, "readOnly": True})
        volumes.append({"name": "edge-tls", "secret": {"secretName": secret}})
    container: Dict[str, Any] = {
        "name": "router", "image": mesh.image, "imagePullPolicy": "IfNotPresent",
        "command": router_command(f"{contract.CONFIG_DIR}/{contract.edge_config_key(group.name)}"),
        "ports": [{"name": "amqp", "containerPort": contract.AMQP_PORT},
                  {"name": "management", "containerPort": contract.MANAGEMENT_PORT},
                  {"name": "http", "containerPort": contract.HTTP_PORT}],
        "volumeMounts": mounts,
        # An edge router has no inter-router connectors, so /readyz is "management answers";
        # whether it reached an interior router is in the mesh's status (edgeGroups).
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 2,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10,
                          "failureThreshold": 6, "initialDelaySeconds": 5},
        "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True,
                            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    pod = group.pod
    if pod.resources:
        container["resources"] = pod.resources
    drain = drain_env(group.pod.termination_grace_seconds)
    if drain:
        container["env"] = drain
    pod_spec: Dict[str, Any] = {"containers": [container], "volumes": volumes,
                                "terminationGracePeriodSeconds": pod.termination_grace_seconds,
                                "enableServiceLinks": False}
    for key, value in (("affinity", pod.affinity), ("tolerations", pod.tolerations),
                       ("nodeSelector", pod.node_selector),
                       ("topologySpreadConstraints", pod.topology_spread),
                       ("priorityClassName", pod.priority_class),
                       ("imagePullSecrets", pod.pull_secrets())):
        if value:
            pod_spec[key] = value
    annotations = {**pod.annotations, RESTART_HASH_ANNOTATION: mesh.restart_hash()}
    annotations.update(pod_annotations)
    if restarted_at:
        annotations[RESTARTED_AT_ANNOTATION] = restarted_at
    return {"metadata": {"labels": {**pod.labels, **contract.edge_labels(mesh.name, group.name)},
                         "annotations": annotations},
            "spec": pod_spec}


def edge_workload(mesh: MeshSpec, group: EdgeGroupSpec, *, owner: Dict[str, Any] | None,
                  pod_annotations: Mapping[str, str] | None = None,
                  restarted_at: str | None = None) -> Dict[str, Any]:
    """A Deployment (``size``) or DaemonSet (``perNode``).  Both replace pods one at a time
    and never go below their count: edge clients reconnect to the group's Service, so a
    rollout must always leave them a router to reconnect to.  ``restarted_at``: when the
    group's routers were last asked to restart by hand (a new value rolls them)."""
    template = _pod_template(mesh, group, pod_annotations or {}, restarted_at)
    selector = {"matchLabels": contract.edge_selector(mesh.name, group.name)}
    if group.per_node:
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _metadata(mesh, group, owner),
                "spec": {"selector": selector, "template": template,
                         "updateStrategy": {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _metadata(mesh, group, owner),
            "spec": {"replicas": group.size, "selector": selector, "template": template,
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}}


def edge_disruption_budget(mesh: MeshSpec, group: EdgeGroupSpec, owner: Dict[str, Any] | None
                           ) -> Dict[str, Any]:
    """At most one edge router of a group evicted at a time (a node drain): its clients
    reconnect to the others (a per-node group's clients wait for their node's router)."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": _metadata(mesh, group, owner),
            "spec": {"maxUnavailable": 1,
                     "selector": {"matchLabels": contract.edge_selector(mesh.name, group.name)}}}


def edge_objects(mesh: MeshSpec, owner: Dict[str, Any] | None,
                 pod_annotations: Mapping[str, Mapping[str, str]] | None = None,
                 restarted_at: Mapping[str, str] | None = None) -> List[Dict[str, Any]]:
    """Every edge group's Service, PodDisruptionBudget and workload, group by group;
    ``pod_annotations``: the certificate stage's, by group; ``restarted_at``: by group."""
    objects: List[Dict[str, Any]] = []
    for group in mesh.edge_groups:
        objects.append(edge_service(mesh, group, owner))
        objects.append(edge_disruption_budget(mesh, group, owner))
        objects.append(edge_workload(mesh, group, owner=owner,
                                     pod_annotations=(pod_annotations or {}).get(group.name),
                                     restarted_at=(restarted_at or {}).get(group.name)))
    return objects
