"""A new inter-router certificate reaches the shared mesh's RUNNING routers: the Secret is
replaced while unsettled messages cross the mesh, the kubelet updates the mounted files, and
the operator has each router load them through management.  Every message is accepted, no pod
is replaced or restarted, and each router reports the new certificate."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any, List

from qdmesh_operator.tls.material import leaf_sha256

from .kube import eventually
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole
from .product import port_forwards, read_resource, router_pods, status_summary
from .traffic import Traffic, entity_rows

PROFILE_TYPE = "org.apache.qpid.dispatch.sslProfile"


def _loaded(obj: Any) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "CertificatesLoaded" and c.get("status") == "True" for c in conditions)


def test_a_new_certificate_is_loaded_by_running_routers_with_nothing_lost(
        mesh: MeshState, core: Any, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    ns = mesh.namespace
    secret = f"{MESH}-inter-router-tls"
    before = router_pods(k8s, ns, MESH)
    old_leaf = base64.b64decode(core.read_namespaced_secret(secret, ns).data["tls.crt"])
    history: List[str] = []
    started = time.monotonic()
    with port_forwards(e2e_kubeconfig, ns, mesh.routers) as urls:
        traffic = Traffic(urls, mesh.routers[0], mesh.routers[-1], stem="certificate")
        try:
            traffic.batch("before")
            # Deleted, the Secret is made again with a new certificate from the mesh's CA (the
            # kubelet keeps the old files meanwhile), as a renewal would write it.
            core.delete_namespaced_secret(secret, ns)

            def renewed_and_loaded() -> bool:
                data = core.read_namespaced_secret(secret, ns).data if _exists(core, ns, secret) else None
                if not data or base64.b64decode(data["tls.crt"]) == old_leaf:
                    return False
                new_sha = leaf_sha256(base64.b64decode(data["tls.crt"]))
                obj = read_resource(k8s, ns, "routermeshes", MESH)
                if not _loaded(obj):
                    return False
                return all(_profile(urls[name]).get("certificateSha256") == new_sha for name in mesh.routers)

            traffic.until(renewed_and_loaded, 300, "the new certificate loaded by every router", "during")
            timing("inter-router Secret replaced -> every router runs the new certificate",
                   time.monotonic() - started)
            traffic.batch("after")
            counts, lost = traffic.settle_all()
        finally:
            traffic.close()
    assert counts == {"accepted": len(traffic.sent)}, counts
    assert lost == [], lost[:5]
    after = router_pods(k8s, ns, MESH)
    assert after == before, f"router pods replaced or restarted: {before} -> {after}"
    eventually(lambda: mesh_whole(k8s, ns, mesh.size, history, started), 120, "the mesh whole",
               describe=lambda: status_summary(read_resource(k8s, ns, "routermeshes", MESH)))


def _exists(core: Any, namespace: str, name: str) -> bool:
    from kubernetes import client

    try:
        core.read_namespaced_secret(name, namespace)
    except client.ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def _profile(url: str) -> Any:
    rows = [r for r in entity_rows(url, PROFILE_TYPE) if r.get("name") == "inter-router-tls"]
    return rows[0] if rows else {}
