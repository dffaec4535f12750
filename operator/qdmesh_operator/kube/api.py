"""The Kubernetes API, as the operator uses it: server-side apply of owned objects, reading
custom resources and pods, and writing status (never spec)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from .. import contract
from ..pod_problems import PodProblem, pod_problem
from ..rolling import PodState
from .apiclient import TimedApiClient
from .applied import AppliedObjects, digest

APPLY = "application/apply-patch+yaml"


@dataclass
class NodeHealth:
    """Whether a node runs its pods, as the node lifecycle controller last judged it."""

    name: str
    ready: bool
    reason: str = ""
    message: str = ""


def node_health_of(node: Any) -> NodeHealth:
    """The node's Ready condition, and nothing else.  Its taints are no earlier news: the node
    lifecycle controller writes Ready=Unknown before it taints a node it lost, and the
    ``node.kubernetes.io/not-ready`` and ``unreachable`` taints outlive a node's recovery (and
    the admission plugin puts ``not-ready`` on every new node) until the controller gets round
    to removing them, so judging by them calls healthy nodes lost."""
    name = str(node.metadata.name)
    conditions = (node.status.conditions if node.status else None) or []
    ready = next((c for c in conditions if c.type == "Ready"), None)
    if ready is None:
        return NodeHealth(name, False, "NoReadyCondition", "the node reports no Ready condition")
    if ready.status != "True":
        return NodeHealth(name, False, str(ready.reason or f"Ready={ready.status}"), str(ready.message or ""))
    return NodeHealth(name, True)


@dataclass
class EdgePod:
    name: str
    group: str
    ip: str
    node: str
    ready: bool
    #: What keeps the pod from running (its scheduler's or kubelet's reason), or None.
    problem: PodProblem | None = None

MERGE = "application/merge-patch+json"


class KubeRefused(Exception):
    """The API server refused a request of one stage; ``kind`` names what was being written
    (the status message says "Kubernetes refused <kind>")."""

    def __init__(self, kind: str, error: ApiException) -> None:
        super().__init__(f"{kind}: {error.status} {error.reason}")
        self.kind = kind
        self.error = error


def _drain(response: Any) -> bytes:
    """Read and let go of an answer asked for unparsed (``_preload_content=False``), so its
    connection goes back to the pool."""
    if not hasattr(response, "release_conn"):
        return b""
    data: bytes = response.read()
    response.release_conn()
    return data


def _resource_version(answer: bytes) -> str:
    try:
        return str(((json.loads(answer) or {}).get("metadata") or {}).get("resourceVersion") or "")
    except (ValueError, AttributeError):
        return ""


class KubeApi:
    """Thin synchronous wrapper; every call raises ``ApiException`` on failure."""

    def __init__(self, api_client: k8s.ApiClient | None = None,
                 applied: AppliedObjects | None = None) -> None:
        self.api_client = api_client or TimedApiClient()
        #: What was applied and is unchanged since (kube/applied.py): not applied again.
        self.applied = applied if applied is not None else AppliedObjects()
        self.custom = k8s.CustomObjectsApi(self.api_client)
        self.core = k8s.CoreV1Api(self.api_client)
        self.apps = k8s.AppsV1Api(self.api_client)
        self.policy = k8s.PolicyV1Api(self.api_client)

    # -- owned objects ------------------------------------------------------------------------
    def apply(self, obj: Mapping[str, Any]) -> None:
        """Server-side apply as field manager ``qdmesh-operator`` (taking over fields another
        manager set, so what the operator renders is what runs).  Not sent when the object
        is as the last apply left it (kube/applied.py)."""
        obj_digest = digest(obj)
        if self.applied.current(obj, obj_digest):
            return
        self.applied.record(obj, obj_digest, _resource_version(self._apply(obj)))

    def _apply(self, obj: Mapping[str, Any]) -> bytes:
        meta = obj["metadata"]
        name, namespace, body = meta["name"], meta["namespace"], dict(obj)
        # The answer (the whole object) is not used: read as bytes, never made into the
        # client's models, which costs more CPU than the request itself.
        options: Dict[str, Any] = {"field_manager": contract.MANAGER, "force": True, "_content_type": APPLY,
                                   "_preload_content": False}
        kind = obj["kind"]
        if kind == "ConfigMap":
            return _drain(self.core.patch_namespaced_config_map(name, namespace, body, **options))
        if kind == "Service":
            return _drain(self.core.patch_namespaced_service(name, namespace, body, **options))
        if kind == "StatefulSet":
            return _drain(self.apps.patch_namespaced_stateful_set(name, namespace, body, **options))
        if kind == "Deployment":
            return _drain(self.apps.patch_namespaced_deployment(name, namespace, body, **options))
        if kind == "DaemonSet":
            return _drain(self.apps.patch_namespaced_daemon_set(name, namespace, body, **options))
        if kind == "Secret":
            return _drain(self.core.patch_namespaced_secret(name, namespace, body, **options))
        if kind == "PodDisruptionBudget":
            return _drain(self.policy.patch_namespaced_pod_disruption_budget(
                name, namespace, body, **options))
        if kind == "Certificate":
            return _drain(self.custom.patch_namespaced_custom_object(
                "cert-manager.io", "v1", namespace, "certificates", name, body, **options))
        if kind == "Ingress":  # spec.linkAccess type Ingress
            networking = k8s.NetworkingV1Api(self.api_client)
            return _drain(networking.patch_namespaced_ingress(name, namespace, body, **options))
        if kind == "Route":  # spec.linkAccess type Route (OpenShift)
            return _drain(self.custom.patch_namespaced_custom_object(
                "route.openshift.io", "v1", namespace, "routes", name, body, **options))
        raise ValueError(f"the operator does not apply {kind} objects")

    def delete_console(self, namespace: str, mesh: str) -> bool:
        """Remove the console of ``mesh`` (spec.console turned off); True if anything was there.
        Called on every reconciliation of a mesh without a console, so absence is no error (and,
        once found, not asked about again while no watch event shows a console back)."""
        name = contract.console(mesh)
        removed = False
        for kind, delete in (("Deployment", self.apps.delete_namespaced_deployment),
                             ("Service", self.core.delete_namespaced_service)):
            if self.applied.known_absent(kind, namespace, name):
                continue
            self.applied.forget(kind, namespace, name)
            try:
                delete(name, namespace)
                removed = True
            except ApiException as e:
                if e.status != 404:
                    raise
                self.applied.record_absent(kind, namespace, name)
        return removed

    def stateful_set(self, namespace: str, name: str) -> Dict[str, Any] | None:
        """The StatefulSet as plain data (camelCase keys), or None."""
        try:
            sts = self.apps.read_namespaced_stateful_set(name, namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return dict(self.api_client.sanitize_for_serialization(sts) or {})

    def pods(self, namespace: str, mesh: str) -> Dict[str, PodState]:
        """The mesh's pods by name: ordinal, controller revision, readiness."""
        found: Dict[str, PodState] = {}
        for pod in self.core.list_namespaced_pod(namespace, label_selector=f"qdmesh.io/mesh={mesh}").items:
            if pod.metadata is None or not pod.metadata.name:
                continue
            name = str(pod.metadata.name)
            conditions = (pod.status.conditions or []) if pod.status else []
            labels = pod.metadata.labels or {}
            ordinal = name.rsplit("-", 1)[-1]
            found[name] = PodState(ordinal=int(ordinal) if ordinal.isdigit() else -1,
                                   revision=str(labels.get("controller-revision-hash") or ""),
                                   ready=any(c.type == "Ready" and c.status == "True" for c in conditions),
                                   node=str((pod.spec.node_name if pod.spec else None) or ""),
                                   problem=pod_problem(pod))
        return found

    def node_health(self, names: Iterable[str]) -> Dict[str, NodeHealth] | None:
        """Each named node's health, or None when the operator may not read nodes (the chart
        grants it; without, lost routers are still seen through their pods).  Read by name,
        not listed: a mesh runs on a few nodes of what may be a large cluster."""
        found: Dict[str, NodeHealth] = {}
        for name in sorted(set(names)):
            try:
                node = self.core.read_node(name)
            except ApiException as e:
                if e.status == 403:
                    return None
                if e.status == 404:  # deleted with its pods still bound to it: as lost as can be
                    found[name] = NodeHealth(name, False, "NodeDeleted", "the node object is gone")
                    continue
                raise
            found[name] = node_health_of(node)
        return found

    # -- edge groups ----------------------------------------------------------------------------
    def edge_workloads(self, namespace: str, mesh: str) -> List[Dict[str, Any]]:
        """The Deployments and DaemonSets of the mesh's edge groups, as plain data with kind."""
        selector = ",".join(f"{k}={v}" for k, v in contract.edge_selector(mesh).items())
        found: List[Dict[str, Any]] = []
        for kind, lister in (("Deployment", self.apps.list_namespaced_deployment),
                             ("DaemonSet", self.apps.list_namespaced_daemon_set)):
            for item in lister(namespace, label_selector=selector).items:
                data = dict(self.api_client.sanitize_for_serialization(item) or {})
                data["kind"] = kind
                found.append(data)
        return found

    def edge_pods(self, namespace: str, mesh: str) -> Dict[str, EdgePod]:
        """The mesh's edge router pods by name: group, pod IP, node, readiness."""
        selector = ",".join(f"{k}={v}" for k, v in contract.edge_selector(mesh).items())
        found: Dict[str, EdgePod] = {}
        for pod in self.core.list_namespaced_pod(namespace, label_selector=selector).items:
            if pod.metadata is None or not pod.metadata.name or pod.metadata.deletion_timestamp:
                continue
            conditions = (pod.status.conditions or []) if pod.status else []
            found[str(pod.metadata.name)] = EdgePod(
                name=str(pod.metadata.name),
                group=str((pod.metadata.labels or {}).get("qdmesh.io/edge-group")),
                ip=str((pod.status.pod_ip if pod.status else None) or ""),
                node=str((pod.spec.node_name if pod.spec else None) or ""),
                ready=any(c.type == "Ready" and c.status == "True" for c in conditions),
                problem=pod_problem(pod))
        return found

    def delete_edge_group(self, namespace: str, workload: Mapping[str, Any],
                          workload_only: bool = False) -> None:
        """Remove an edge group that left the spec: its workload, Service and disruption budget
        (``workload_only``: the workload, which the group replaces by one of the other kind)."""
        name = workload["metadata"]["name"]
        delete = (self.apps.delete_namespaced_daemon_set if workload.get("kind") == "DaemonSet"
                  else self.apps.delete_namespaced_deployment)
        calls = [delete] if workload_only else [delete, self.core.delete_namespaced_service,
                                                 self.policy.delete_namespaced_pod_disruption_budget]
        kinds = [str(workload.get("kind") or "Deployment"), "Service", "PodDisruptionBudget"]
        for kind, call in zip(kinds, calls):
            self.applied.forget(kind, namespace, name)
            try:
                call(name, namespace)
            except ApiException as e:
                if e.status != 404:
                    raise

    # -- custom resources ---------------------------------------------------------------------
    def get(self, plural: str, namespace: str, name: str) -> Dict[str, Any] | None:
        try:
            found: Any = self.custom.get_namespaced_custom_object(
                contract.GROUP, contract.VERSION, namespace, plural, name)
            return dict(found)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def list(self, plural: str, namespace: str) -> List[Dict[str, Any]]:
        result: Any = self.custom.list_namespaced_custom_object(
            contract.GROUP, contract.VERSION, namespace, plural)
        return list(result.get("items") or [])

    def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        """Merge-patch the status subresource only (a resource deleted meanwhile is no error)."""
        try:
            _drain(self.custom.patch_namespaced_custom_object_status(
                contract.GROUP, contract.VERSION, namespace, plural, name, {"status": dict(status)},
                _content_type=MERGE, _preload_content=False))
        except ApiException as e:
            if e.status != 404:
                raise

    def remove_annotations(self, plural: str, namespace: str, name: str, keys: List[str]) -> None:
        """Merge-patch ``keys`` out of a custom resource's annotations (its metadata only, never
        its spec); a resource deleted meanwhile is no error."""
        patch = {"metadata": {"annotations": {key: None for key in keys}}}
        try:
            _drain(self.custom.patch_namespaced_custom_object(
                contract.GROUP, contract.VERSION, namespace, plural, name, patch,
                _content_type=MERGE, _preload_content=False))
        except ApiException as e:
            if e.status != 404:
                raise
