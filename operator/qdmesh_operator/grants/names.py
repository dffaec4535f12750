"""Names of what linking meshes across clusters makes on the accepting side: the link
listener's sslProfile and Secrets of a mesh, a grant's Secrets, the redemption server's."""

from __future__ import annotations

GRANT_PLURAL = "meshaccessgrants"
GRANT_KIND = "MeshAccessGrant"
#: The sslProfile of the link listener, and where its Secret is mounted in router pods.
LINK_PROFILE = "link-tls"
LINK_TLS_DIR = "/etc/qdmesh/link"
#: The edge link listener's sslProfile: the same certificate, its own trusted bundle (the
#: client CAs of edge grants only, in the Secret's key EDGE_CA_KEY), so a certificate of an
#: edge grant never opens the inter-router listener, nor one of an inter-router grant the edge one.
LINK_EDGE_PROFILE = "link-edge-tls"
EDGE_CA_KEY = "edge-ca.crt"
#: The operator-level CA of the redemption server's certificate (in the operator's namespace).
SERVER_CA_SECRET = "qdmesh-grant-server-ca"


def link_ca_secret(mesh: str) -> str:
    """The CA that signs the link listener's certificate (the linking side trusts it)."""
    return f"{mesh}-link-ca"


def link_tls_secret(mesh: str) -> str:
    """The link listener's certificate and the bundle of the live grants' client CAs."""
    return f"{mesh}-link-tls"


def token_secret(grant: str) -> str:
    return f"{grant}-token"


def client_ca_secret(grant: str) -> str:
    return f"{grant}-client-ca"


def client_common_name(link_namespace: str, link_name: str, mesh: str) -> str:
    """The CN of the client certificate issued to one link."""
    return f"{link_namespace}/{link_name}@{mesh}"
