"""The link listener's Secrets of a mesh with ``spec.linkAccess``, written by the mesh's
reconciliation (certificate stage):

- ``<mesh>-link-ca`` (ca.crt, ca.key): signs the listener's certificate; the linking side gets
  its ca.crt at redemption and verifies the listener with it.  Never mounted.
- ``<mesh>-link-tls`` (tls.crt, tls.key, ca.crt, edge-ca.crt): mounted in every interior
  router.  tls.crt names the host(s) the other cluster reaches; ca.crt is the inter-router
  listener's trusted bundle: the client CAs of the mesh's live grants of role inter-router (a
  grant being deleted is left out: revocation), after the link CA itself, which signs no
  client certificate, so the bundle is never empty; edge-ca.crt is the same for the edge
  link listener and the grants of role edge.

Both owned by the RouterMesh.  A change of the bundle or of the names is one replace; the
routers load the new files at run time (tls/live.py, apply/tls_reload.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from kubernetes import client
from kubernetes.client.rest import ApiException

from .. import contract
from ..kube import secrets as store
from ..linking.wire import EDGE, INTER_ROUTER
from ..model.mesh import MeshSpec
from ..tls import certs
from ..tls.live import LiveProfile
from ..tls.material import of_files
from . import pki
from .names import (
    EDGE_CA_KEY,
    GRANT_PLURAL,
    LINK_EDGE_PROFILE,
    LINK_PROFILE,
    client_ca_secret,
    link_ca_secret,
    link_tls_secret,
)

HOSTS_ANNOTATION = "qdmesh.io/link-hosts"


def live_grants(custom: Any, namespace: str, mesh: str) -> List[Dict[str, Any]]:
    """The grants of ``mesh`` that are not being deleted, by name."""
    found = custom.list_namespaced_custom_object(contract.GROUP, contract.VERSION, namespace, GRANT_PLURAL)
    grants = [g for g in found.get("items") or []
              if (g.get("spec") or {}).get("meshName") == mesh
              and not (g.get("metadata") or {}).get("deletionTimestamp")]
    return sorted(grants, key=lambda g: str(g["metadata"]["name"]))


def balancer_hosts(core: Any, mesh: MeshSpec) -> List[str]:
    """The addresses a LoadBalancer gave the link Service (none yet: empty)."""
    try:
        service = core.read_namespaced_service(contract.link_service(mesh.name), mesh.namespace)
    except ApiException as e:
        if e.status == 404:
            return []
        raise
    balancer = service.status.load_balancer if service.status else None
    ingress = (balancer.ingress if balancer else None) or []
    return [str(i.ip or i.hostname) for i in ingress if (i.ip or i.hostname)]


def listener_hosts(core: Any, mesh: MeshSpec) -> List[str]:
    """Every name the listener's certificate must hold."""
    hosts = [f"{mesh.name}-link.{mesh.namespace}.svc"]
    if mesh.link_access.host:
        hosts.insert(0, mesh.link_access.host)
    if mesh.link_access.type == "LoadBalancer":
        hosts.extend(h for h in balancer_hosts(core, mesh) if h not in hosts)
    return hosts


def _ensure_ca(core: Any, mesh: MeshSpec, owner: Dict[str, Any] | None) -> certs.KeyPair:
    name = link_ca_secret(mesh.name)
    for _ in range(2):
        found = store.read(core, mesh.namespace, name)
        if found is not None:
            return certs.KeyPair(found[0]["ca.crt"], found[0]["ca.key"])
        ca = certs.new_ca(f"{mesh.name} link CA")
        secret = store.body(mesh.namespace, name, {"ca.crt": ca.cert_pem, "ca.key": ca.key_pem},
                            labels=contract.labels(mesh.name), owner=owner)
        if store.create(core, secret):
            return ca
    raise certs.CertificateError(f"Secret {name}: created and deleted again meanwhile")


def _bundle(core: Any, namespace: str, ca: certs.KeyPair, grants: Sequence[Mapping[str, Any]]) -> bytes:
    parts = [ca.cert_pem]
    for grant in grants:
        found = store.read(core, namespace, client_ca_secret(str(grant["metadata"]["name"])))
        if found is not None and found[0].get("ca.crt"):
            parts.append(found[0]["ca.crt"])
    return b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts)


def grant_role(grant: Mapping[str, Any]) -> str:
    return str((grant.get("spec") or {}).get("role") or INTER_ROUTER)


def link_profiles(mesh_name: str, data: Mapping[str, bytes]) -> List[LiveProfile]:
    """The two link listeners' profiles, with the material of the Secret's decoded data."""
    edge = {"tls.crt": data.get("tls.crt") or b"", "ca.crt": data.get(EDGE_CA_KEY) or b""}
    name = link_tls_secret(mesh_name)
    return [LiveProfile(LINK_PROFILE, name, of_files(data), replace_connections=False),
            LiveProfile(LINK_EDGE_PROFILE, name, of_files(edge), replace_connections=False)]


def ensure_link_tls(core: Any, mesh: MeshSpec, owner: Dict[str, Any] | None) -> List[LiveProfile]:
    """Both Secrets as they should be now; the profiles the routers should run (none without
    linkAccess).  Raises ApiException (the caller reports kind Secret)."""
    if not mesh.link_access.enabled:
        return []
    ca = _ensure_ca(core, mesh, owner)
    custom = client.CustomObjectsApi(core.api_client)
    grants = live_grants(custom, mesh.namespace, mesh.name)
    bundle = _bundle(core, mesh.namespace, ca, [g for g in grants if grant_role(g) == INTER_ROUTER])
    edge_bundle = _bundle(core, mesh.namespace, ca, [g for g in grants if grant_role(g) == EDGE])
    hosts = listener_hosts(core, mesh)
    name = link_tls_secret(mesh.name)
    found = store.read(core, mesh.namespace, name)
    data = dict(found[0]) if found is not None else {}
    names_now = (found[2].get(HOSTS_ANNOTATION) if found is not None else None) == ",".join(hosts)
    fresh = (names_now and "tls.crt" in data and "tls.key" in data and not pki.needs_renewal(data["tls.crt"])
             and _signed_by(data["tls.crt"], ca.cert_pem))
    if not fresh:
        pair = pki.issue(ca, hosts[0], hosts=hosts, server=True, lifetime=pki.SERVER_LIFETIME)
        data.update({"tls.crt": pair.cert_pem, "tls.key": pair.key_pem})
    if found is None or not fresh or data.get("ca.crt") != bundle or data.get(EDGE_CA_KEY) != edge_bundle:
        data.update({"ca.crt": bundle, EDGE_CA_KEY: edge_bundle})
        secret = store.body(mesh.namespace, name, data, labels=contract.labels(mesh.name), owner=owner,
                            annotations={HOSTS_ANNOTATION: ",".join(hosts)})
        if found is None:
            store.create(core, secret)  # lost a race: the next reconciliation reads the winner
        else:
            store.replace(core, secret, found[1])
    return link_profiles(mesh.name, data)


def _signed_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    try:
        certs.load_cert(cert_pem, "tls.crt").verify_directly_issued_by(certs.load_cert(ca_pem, "ca.crt"))
    except Exception:  # not a certificate, another CA's, a bad signature: issue a new one
        return False
    return True
