"""What the mesh's reconciliation reads of its MeshLinks: the links naming the mesh, what each
redeemed (its credentials Secret), and the Secret mounted on the routers (links/observe.py
decides from them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List

from kubernetes.client.rest import ApiException

from .. import contract


@dataclass
class ObservedLinks:
    #: MeshLinks naming the mesh (not being deleted).
    bodies: List[Dict[str, Any]] = field(default_factory=list)
    #: Each link's credentials Secret data, by link name (None: not redeemed yet).
    credentials: Dict[str, Dict[str, Any] | None] = field(default_factory=dict)
    #: The data of the Secret mounted on the routers (None: there is none).
    mounted: Dict[str, Any] | None = None


def _secret(core: Any, namespace: str, name: str) -> Dict[str, Any] | None:
    try:
        return dict(core.read_namespaced_secret(name, namespace).data or {})
    except ApiException as e:
        if e.status in (403, 404):
            return None
        raise


def read_links(kube: Any, namespace: str, mesh: str) -> ObservedLinks:
    found = ObservedLinks()
    try:
        items = kube.list(contract.MESH_LINK_PLURAL, namespace)
    except ApiException as e:
        if e.status in (403, 404):  # MeshLinks not installed, or not the operator's to read
            return found
        raise
    for item in items:
        meta = item.get("metadata") or {}
        if (item.get("spec") or {}).get("meshName") != mesh or meta.get("deletionTimestamp"):
            continue
        found.bodies.append(item)
        name = meta["name"]
        found.credentials[name] = _secret(kube.core, namespace, contract.link_credentials_secret(name))
    found.mounted = _secret(kube.core, namespace, contract.mesh_links_secret(mesh))
    return found
