"""Finding a RouterMesh's router pods through the Kubernetes API (kubeconfig, context, namespace).

Every API failure becomes a PluginError naming what was looked for and what to do about it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List

from .errors import PluginError

GROUP = "qdmesh.io"
VERSION = "v1alpha1"
MESH_PLURAL = "routermeshes"
MESH_LABEL = "qdmesh.io/mesh"
# Edge routers (spec.edgeGroups) carry these instead of MESH_LABEL.
EDGE_OF_LABEL = "qdmesh.io/edge-of"
EDGE_GROUP_LABEL = "qdmesh.io/edge-group"


@dataclass
class RouterPod:
    name: str
    phase: str
    ready: bool
    mesh: str | None
    #: The edge group of an edge router's pod; None for an interior router.
    edge_group: str | None = None

    @property
    def reachable(self) -> bool:
        """A router process may answer management only in a Running pod (ready or not)."""
        return self.phase == "Running"

    def state(self) -> str:
        return "ready" if self.ready else ("running, not ready" if self.reachable else self.phase.lower())


@dataclass
class KubeTarget:
    """Where the user pointed kubectl: kubeconfig file, context, and the namespace to use."""
    kubeconfig: str | None
    context: str | None
    namespace: str
    api: Any  # kubernetes.client.ApiClient


def connect(kubeconfig: str | None, context: str | None, namespace: str | None) -> KubeTarget:
    """Load the kubeconfig like kubectl does; the namespace defaults to the context's own."""
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    try:
        api = config.new_client_from_config(config_file=kubeconfig, context=context)
        if namespace is None:
            _, active = config.list_kube_config_contexts(config_file=kubeconfig)
            chosen = active
            if context is not None:
                contexts, _ = config.list_kube_config_contexts(config_file=kubeconfig)
                chosen = next((c for c in contexts if c.get("name") == context), active)
            namespace = (chosen or {}).get("context", {}).get("namespace") or "default"
    except (ConfigException, OSError) as e:
        where = kubeconfig or "$KUBECONFIG or ~/.kube/config"
        raise PluginError(f"cannot use the kubeconfig ({where}): {e}") from None
    return KubeTarget(kubeconfig, context, namespace, api)


def _status_message(exc: Any) -> str:
    try:
        return str(json.loads(exc.body).get("message") or exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(getattr(exc, "reason", exc))


def _api_error(exc: Exception, doing: str) -> PluginError:
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        if exc.status == 403:
            return PluginError(f"forbidden: {doing}: {_status_message(exc)}")
        return PluginError(f"{doing}: {_status_message(exc)} (HTTP {exc.status})")
    return PluginError(f"{doing}: cannot reach the Kubernetes API server: {exc}")


def get_mesh(target: KubeTarget, name: str) -> Dict[str, Any]:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = client.CustomObjectsApi(target.api)
    try:
        mesh = api.get_namespaced_custom_object(GROUP, VERSION, target.namespace, MESH_PLURAL, name)
        return dict(mesh)  # type: ignore[call-overload]
    except ApiException as e:
        if e.status == 404:
            if _is_status_not_found(e):
                raise PluginError(f"RouterMesh {name!r} not found in namespace {target.namespace!r} "
                                  f"(kubectl get routermeshes -n {target.namespace} lists them)") from None
            raise PluginError("the RouterMesh resource type is not installed in this cluster "
                              "(install the qdmesh Helm chart, which carries its CRDs)") from None
        raise _api_error(e, f"reading RouterMesh {name!r} in namespace {target.namespace!r}") from None
    except Exception as e:  # urllib3 connection errors and the like
        raise _api_error(e, f"reading RouterMesh {name!r}") from None


def _is_status_not_found(exc: Any) -> bool:
    """A 404 about the object (a Status with details), not about the resource type."""
    try:
        body = json.loads(exc.body)
    except (TypeError, ValueError):
        return False
    return bool(body.get("reason") == "NotFound" and body.get("details", {}).get("name"))


def _pod(item: Any) -> RouterPod:
    conditions = item.status.conditions or []
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    labels = item.metadata.labels or {}
    return RouterPod(item.metadata.name, item.status.phase or "Unknown", ready,
                     labels.get(MESH_LABEL) or labels.get(EDGE_OF_LABEL), labels.get(EDGE_GROUP_LABEL))


def mesh_pods(target: KubeTarget, mesh: str) -> List[RouterPod]:
    from kubernetes import client

    try:
        pods = client.CoreV1Api(target.api).list_namespaced_pod(
            target.namespace, label_selector=f"{MESH_LABEL}={mesh}")
    except Exception as e:
        doing = f"listing the router pods of {mesh!r} in namespace {target.namespace!r}"
        raise _api_error(e, doing) from None
    found = [_pod(p) for p in pods.items]
    return sorted(found, key=lambda p: _ordinal_key(p.name))


def edge_pods(target: KubeTarget, mesh: str) -> List[RouterPod]:
    """The edge router pods of ``mesh``'s edge groups, by group and name."""
    from kubernetes import client

    try:
        pods = client.CoreV1Api(target.api).list_namespaced_pod(
            target.namespace, label_selector=f"{EDGE_OF_LABEL}={mesh}")
    except Exception as e:
        doing = f"listing the edge router pods of {mesh!r} in namespace {target.namespace!r}"
        raise _api_error(e, doing) from None
    return sorted((_pod(p) for p in pods.items), key=lambda p: (p.edge_group or "", p.name))


def _ordinal_key(name: str) -> tuple:
    stem, _, tail = name.rpartition("-")
    return (stem, int(tail)) if tail.isdigit() else (name, -1)


def one_pod(target: KubeTarget, name: str) -> RouterPod:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        item = client.CoreV1Api(target.api).read_namespaced_pod(name, target.namespace)
    except ApiException as e:
        if e.status == 404:
            raise PluginError(f"pod {name!r} not found in namespace {target.namespace!r}") from None
        raise _api_error(e, f"reading pod {name!r}") from None
    except Exception as e:
        raise _api_error(e, f"reading pod {name!r}") from None
    return _pod(item)


def check_port_forward_allowed(target: KubeTarget) -> None:
    """Ask the API server (SelfSubjectAccessReview) before trying: a clear RBAC error up front."""
    from kubernetes import client

    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(
            namespace=target.namespace, verb="create", resource="pods", subresource="portforward")))
    try:
        result = client.AuthorizationV1Api(target.api).create_self_subject_access_review(review)
    except Exception:
        return  # cannot ask: let the port-forward itself tell
    if result.status is not None and not result.status.allowed:
        raise PluginError(
            f"RBAC forbids port-forward to pods in namespace {target.namespace!r}: kubectl qdstat needs "
            "'create' on 'pods/portforward' (ask for a Role granting it; no exec is needed)")


def mesh_condition(mesh: Dict[str, Any], kind: str) -> Dict[str, Any] | None:
    for cond in (mesh.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            found: Dict[str, Any] = cond
            return found
    return None
