"""Revoking a grant (deleting it): its client CA leaves the link listener's trusted bundle (the
mesh's reconciliation rewrites ``<mesh>-link-tls`` without it, and the routers load it), and
once EVERY router runs the bundles without it, the inter-router (or edge) connections its links
made are closed through management (UPDATE connection adminStatus deleted; a qdmesh router
accepts it for inter-router and edge connections it accepted).  Closed before, a link could
reconnect with a certificate still trusted.  Other grants' links are not touched."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping

from qdrouter.tools.errors import ManagementError

from ..apply.management import CONNECTION_TYPE, ClientPool
from ..apply.router_urls import overrides, router_urls
from ..kube import secrets as store
from ..model.mesh import MeshSpec
from ..tls.credentials import ManagementCredentials
from .link_tls import link_profiles
from .names import client_common_name, link_tls_secret

log = logging.getLogger("qdmesh.operator.grants")
PROFILE_TYPE = "org.apache.qpid.dispatch.sslProfile"


@dataclass
class Revocation:
    #: Whether every router runs the bundle without the grant and its links' connections are closed.
    done: bool = False
    closed: int = 0
    waiting: List[str] = field(default_factory=list)


def link_names(grant: Mapping[str, Any]) -> List[str]:
    """The CNs of the client certificates issued with ``grant`` (its status.links)."""
    links = ((grant.get("status") or {}).get("links")) or []
    return [client_common_name(str(x.get("namespace")), str(x.get("linkName")), str(x.get("meshName")))
            for x in links if isinstance(x, Mapping)]


def _common_name(user: Any) -> str | None:
    for part in str(user or "").split(","):
        key, _, value = part.strip().partition("=")
        if key.upper() == "CN":
            return value
    return None


def revoke(core: Any, mesh: MeshSpec, common_names: Iterable[str],
           credentials: ManagementCredentials) -> Revocation:
    """One attempt; ``done`` False: try again a little later (a router not yet running the new
    bundle, or not reachable)."""
    found = Revocation()
    enabled = mesh.link_access.enabled
    secret = store.read(core, mesh.namespace, link_tls_secret(mesh.name)) if enabled else None
    if secret is None:
        # linkAccess is off (the routers restart without the link listener and its
        # connections), or never made its Secret: nothing to close.
        found.done = True
        return found
    profiles = link_profiles(mesh.name, secret[0])
    urls = router_urls(mesh, mesh.router_ids())
    tls = credentials.for_mesh(core, mesh) if overrides() is None else None
    names = set(common_names)
    pool = ClientPool()
    try:
        for rid in mesh.router_ids():
            url = urls.get(rid)
            if url is None:
                found.waiting.append(f"{rid}: no address")
                continue
            try:
                client = pool.get(url, tls if url.startswith("amqps:") else None)
                if not all(p.material.matches(client.read(PROFILE_TYPE, name=p.profile)) for p in profiles):
                    found.waiting.append(f"{rid}: still runs a bundle with the grant's CA")
                    continue
                for row in client.query(CONNECTION_TYPE):
                    if row.get("role") in ("inter-router", "edge") and row.get("dir") == "in" \
                            and _common_name(row.get("user")) in names:
                        client.update(CONNECTION_TYPE, {"adminStatus": "deleted"},
                                      identity=str(row["identity"]))
                        found.closed += 1
            except ManagementError as e:
                found.waiting.append(f"{rid}: {e}")
    finally:
        pool.close()
    found.done = not found.waiting
    if found.closed:
        log.info("closed %d link connection(s) of revoked grant on RouterMesh %s/%s", found.closed,
                 mesh.namespace, mesh.name)
    return found
