"""Where a mesh's inter-router certificate lives and how its pods say which one they run with:
the Secret each mode uses, and the pod-template annotations that roll the routers when a
certificate they read at start changes.  The certificate stage decides them; the render stage
writes them into the pod templates."""

from __future__ import annotations

from .. import contract
from ..model.mesh import MeshSpec

# Mode Managed: the fingerprint of the routers' certificate.  Routers read it at start-up, so a
# renewed certificate changes the pod template and rolls them one at a time.
CERT_ANNOTATION = "qdmesh.io/inter-router-cert"
# A digest of the Secrets the routers read at start that the operator does not write
# (tls/mounted.py): a renewal rolls the routers.
MOUNTED_SECRETS_ANNOTATION = "qdmesh.io/mounted-secrets"


def inter_router_secret(mesh: MeshSpec) -> str | None:
    tls = mesh.inter_router_tls
    if tls.mode == "Secret":
        return tls.secret_name
    if tls.mode in ("CertManager", "Managed"):
        return contract.inter_router_tls_secret(mesh.name)
    return None
