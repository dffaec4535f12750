"""The Secret ``<link>-credentials``: what a redemption gave, kept so that the token (a one-time
code) is never redeemed again while it exists.  Owned by its MeshLink, so deleting the link
deletes it.  Data: ``tls.crt``, ``tls.key`` (the client certificate the accepting side issued),
``ca.crt`` (the CA of its link listener), ``endpoints`` (JSON list of ``host:port``),
``remoteMesh``, ``remoteNamespace`` and ``remoteRouters`` (JSON list of router ids)."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple

from .. import contract
from ..linking.wire import Endpoint, RedeemResponse, WireError
from .spec import KIND

LINK_LABEL = "qdmesh.io/mesh-link"


def credentials_name(link: str) -> str:
    return contract.link_credentials_secret(link)


@dataclass(frozen=True)
class Credentials:
    remote_mesh: str
    remote_namespace: str
    endpoints: Tuple[Endpoint, ...]
    ca_pem: str
    cert_pem: str
    key_pem: str
    remote_routers: Tuple[str, ...] = ()

    def files(self) -> Dict[str, str]:
        return {"ca.crt": self.ca_pem, "tls.crt": self.cert_pem, "tls.key": self.key_pem}


def of_response(response: RedeemResponse) -> Credentials:
    return Credentials(remote_mesh=response.mesh_name, remote_namespace=response.namespace,
                       endpoints=response.endpoints, ca_pem=response.ca_pem, cert_pem=response.cert_pem,
                       key_pem=response.key_pem, remote_routers=response.router_ids)


def link_owner(link: Mapping[str, Any]) -> Dict[str, Any]:
    meta = link["metadata"]
    return {"apiVersion": contract.API_VERSION, "kind": KIND, "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def credentials_secret(link: Mapping[str, Any], found: Credentials) -> Dict[str, Any]:
    """The Secret to create for ``link`` (its body) from what was redeemed."""
    meta = link["metadata"]
    data = {**found.files(), "endpoints": json.dumps([f"{e.host}:{e.port}" for e in found.endpoints]),
            "remoteMesh": found.remote_mesh, "remoteNamespace": found.remote_namespace,
            "remoteRouters": json.dumps(list(found.remote_routers))}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": credentials_name(meta["name"]), "namespace": meta["namespace"],
                         "labels": {LINK_LABEL: meta["name"],
                                    "app.kubernetes.io/managed-by": contract.MANAGER},
                         "ownerReferences": [link_owner(link)]},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def _endpoint(text: str) -> Endpoint:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise WireError("endpoints", f"{text!r} is not host:port")
    return Endpoint(host, int(port))


def parse_credentials(data: Mapping[str, Any]) -> Credentials:
    """A credentials Secret's data (base64, as the API server gives it); raises WireError
    naming the key that is missing or wrong (the Secret may have been edited by hand)."""
    text: Dict[str, str] = {}
    for key in ("tls.crt", "tls.key", "ca.crt", "endpoints", "remoteMesh", "remoteNamespace"):
        raw = data.get(key)
        if not isinstance(raw, str) or not raw:
            raise WireError(key, "missing")
        try:
            text[key] = base64.b64decode(raw, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise WireError(key, "is not base64 text") from None
    try:
        endpoints = json.loads(text["endpoints"])
        routers = json.loads(base64.b64decode(data.get("remoteRouters") or "W10=").decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise WireError("endpoints", "is not a JSON list") from None
    if not isinstance(endpoints, list) or not endpoints or not all(isinstance(e, str) for e in endpoints):
        raise WireError("endpoints", "must list host:port endpoints")
    if not isinstance(routers, list):
        routers = []
    return Credentials(remote_mesh=text["remoteMesh"], remote_namespace=text["remoteNamespace"],
                       endpoints=tuple(_endpoint(e) for e in endpoints), ca_pem=text["ca.crt"],
                       cert_pem=text["tls.crt"], key_pem=text["tls.key"],
                       remote_routers=tuple(str(r) for r in routers))
