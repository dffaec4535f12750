"""Exposure objects of ``spec.linkAccess`` that are no longer wanted: the Ingress or Route of a
type given up, or everything when linkAccess is turned off.  Looked for only when the mesh
has linkAccess or its live pods still mount the link listener's Secret (it had it), so a
mesh that never linked costs no request."""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Tuple

from kubernetes import client
from kubernetes.client.rest import ApiException

from ..kube.api import KubeApi, KubeRefused
from ..model.mesh import MeshSpec
from ..render.link_access import service_name


def had_link_access(live_stateful_set: Mapping[str, Any] | None) -> bool:
    template = ((live_stateful_set or {}).get("spec") or {}).get("template") or {}
    volumes = (template.get("spec") or {}).get("volumes") or []
    return any(v.get("name") == "link-tls" for v in volumes)


def remove_unwanted(kube: KubeApi, mesh: MeshSpec,
                    live_stateful_set: Mapping[str, Any] | None) -> List[Tuple[str, str, str]]:
    """Delete them; returns Events to post as (type, reason, message)."""
    access = mesh.link_access
    if not access.enabled and not had_link_access(live_stateful_set):
        return []
    name, namespace = service_name(mesh.name), mesh.namespace
    networking = client.NetworkingV1Api(kube.api_client)
    deletes: List[Tuple[str, Callable[[], Any]]] = []
    if access.type != "Ingress":
        deletes.append(("Ingress", lambda: networking.delete_namespaced_ingress(name, namespace)))
    if access.type != "Route":
        deletes.append(("Route", lambda: kube.custom.delete_namespaced_custom_object(
            "route.openshift.io", "v1", namespace, "routes", name)))
    if not access.enabled:
        deletes.append(("Service", lambda: kube.core.delete_namespaced_service(name, namespace)))
    events = []
    for kind, delete in deletes:
        kube.applied.forget(kind, namespace, name)
        try:
            delete()
        except ApiException as e:
            if e.status == 404:  # not there (or, for Route, no OpenShift): nothing to remove
                continue
            raise KubeRefused(kind, e) from None
        events.append(("Normal", "LinkAccessRemoved", f"{kind} {name} removed (spec.linkAccess is "
                       f"{access.type})"))
    return events
