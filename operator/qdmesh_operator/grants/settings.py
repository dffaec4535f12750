"""Where the redemption server listens and what the tokens' URLs name: from the environment
(the chart sets it; ``qdmesh-operator --grant-server-port``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .. import contract
from ..kube import secrets as store
from ..tls import certs
from .names import SERVER_CA_SECRET

PORT_ENV = "QDMESH_GRANT_SERVER_PORT"
HOST_ENV = "QDMESH_GRANT_SERVER_HOST"
ADVERTISED_PORT_ENV = "QDMESH_GRANT_SERVER_ADVERTISED_PORT"
DEFAULT_PORT = 8443
SERVICE = "qdmesh-grant-server"


@dataclass(frozen=True)
class ServerSettings:
    #: The port the operator listens on (0: no redemption server in this process).
    port: int
    #: The host name or address the other cluster reaches the server by (in URLs and the
    #: server's certificate).
    host: str
    #: The port in the tokens' URLs (a NodePort's, a LoadBalancer's), default ``port``.
    advertised_port: int
    #: The operator's namespace: where the server's CA Secret is.
    namespace: str

    def url(self, namespace: str, grant: str) -> str:
        return f"https://{self.host}:{self.advertised_port}/grants/{namespace}/{grant}"


def _port(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    try:
        port = int(value) if value else default
    except ValueError:
        raise SystemExit(f"qdmesh-operator: {name}={value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise SystemExit(f"qdmesh-operator: {name}={value!r} is not a port number")
    return port


def from_env() -> ServerSettings:
    namespace = os.environ.get("POD_NAMESPACE") or "default"
    # Unset: no server (``kopf run -m qdmesh_operator.handlers``); qdmesh-operator sets it,
    # to DEFAULT_PORT unless told otherwise.
    port = _port(PORT_ENV, 0)
    return ServerSettings(port=port, host=os.environ.get(HOST_ENV) or f"{SERVICE}.{namespace}.svc",
                          advertised_port=_port(ADVERTISED_PORT_ENV, port) or port, namespace=namespace)


def ensure_server_ca(core: Any, settings: ServerSettings) -> certs.KeyPair:
    """The CA of the redemption server's certificate (tokens carry its ca.crt); made once."""
    for _ in range(2):
        found = store.read(core, settings.namespace, SERVER_CA_SECRET)
        if found is not None:
            return certs.KeyPair(found[0]["ca.crt"], found[0]["ca.key"])
        ca = certs.new_ca("qdmesh grant server CA")
        data = {"ca.crt": ca.cert_pem, "ca.key": ca.key_pem}
        secret = store.body(settings.namespace, SERVER_CA_SECRET, data,
                            labels={"app.kubernetes.io/managed-by": contract.MANAGER}, owner=None)
        if store.create(core, secret):
            return ca
    raise certs.CertificateError(f"Secret {SERVER_CA_SECRET}: created and deleted again meanwhile")
