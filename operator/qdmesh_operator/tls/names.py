"""Where a mesh's certificates live: the Secret each mode uses for interior and edge routers,
and the pod-template annotations of earlier operators (kept as they are, so an upgrade does
not roll the routers; routers now load renewed certificates at run time, tls/live.py)."""

from __future__ import annotations

from .. import contract
from ..model.mesh import MeshSpec

# Mode Managed: the fingerprint of the routers' certificate when their pods were made.  Kept at
# the value the live pod template has, never changed: a renewal no longer restarts routers.
CERT_ANNOTATION = "qdmesh.io/inter-router-cert"
# A digest of what the routers read only at start from Secrets the operator does not write
# (tls/mounted.py: SASL password keys): a change rolls the routers.
MOUNTED_SECRETS_ANNOTATION = "qdmesh.io/mounted-secrets"


def inter_router_secret(mesh: MeshSpec) -> str | None:
    tls = mesh.inter_router_tls
    if tls.mode == "Secret":
        return tls.secret_name
    if tls.mode in ("CertManager", "Managed"):
        return contract.inter_router_tls_secret(mesh.name)
    return None


def edge_secret(mesh: MeshSpec) -> str | None:
    """The Secret edge routers present to interior routers and to the operator: their own in
    mode Managed (issued by the mesh's CA), the inter-router one in modes Secret and
    CertManager (one certificate for the whole mesh), none with TLS disabled."""
    tls = mesh.inter_router_tls
    if tls.mode == "Managed":
        return contract.edge_tls_secret(mesh.name)
    if tls.mode == "Secret":
        return tls.secret_name
    if tls.mode == "CertManager":
        return contract.inter_router_tls_secret(mesh.name)
    return None
