"""One reconciliation of a MeshAccessGrant: its client CA and token Secrets (made once, owned
by the grant), and its status: url, expiresAt and the Ready condition.  The redemption count
and the links are the redemption's to write (redeem.py), never this: a status patch from here
cannot undo a redemption counted meanwhile."""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any, Dict, Mapping

from .. import contract
from ..kube import secrets as store
from ..linking.wire import TOKEN_LABEL, Token
from ..model.errors import SpecError
from ..model.mesh import parse_mesh
from ..tls import certs
from .names import GRANT_KIND, client_ca_secret, token_secret
from .settings import ServerSettings, ensure_server_ca
from .spec import condition, expires_at, parse_grant, redemption_state, stamp

CODE_BYTES = 32


def grant_owner(body: Mapping[str, Any]) -> Dict[str, Any]:
    meta = body["metadata"]
    return {"apiVersion": contract.API_VERSION, "kind": GRANT_KIND, "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def ensure_client_ca(core: Any, body: Mapping[str, Any]) -> certs.KeyPair:
    """The grant's own CA: it signs the client certificates of the links redeemed with it."""
    namespace, name = body["metadata"]["namespace"], client_ca_secret(body["metadata"]["name"])
    for _ in range(2):
        found = store.read(core, namespace, name)
        if found is not None:
            return certs.KeyPair(found[0]["ca.crt"], found[0]["ca.key"])
        ca = certs.new_ca(f"{body['metadata']['name']} grant client CA")
        secret = store.body(namespace, name, {"ca.crt": ca.cert_pem, "ca.key": ca.key_pem},
                            labels={"app.kubernetes.io/managed-by": contract.MANAGER},
                            owner=grant_owner(body))
        if store.create(core, secret):
            return ca
    raise certs.CertificateError(f"Secret {name}: created and deleted again meanwhile")


def ensure_token(core: Any, body: Mapping[str, Any], settings: ServerSettings, server_ca: bytes) -> None:
    """The token Secret: url, a random one-time code (kept once made) and the server's CA."""
    namespace, grant = body["metadata"]["namespace"], body["metadata"]["name"]
    name = token_secret(grant)
    found = store.read(core, namespace, name)
    code = found[0].get("code", b"").decode() if found is not None else ""
    token = Token(url=settings.url(namespace, grant), code=code or secrets.token_urlsafe(CODE_BYTES),
                  ca_pem=server_ca.decode())
    data = {k: v.encode() for k, v in token.data().items()}
    if found is not None and found[0] == data:
        return
    secret = store.body(namespace, name, data, owner=grant_owner(body),
                        labels={TOKEN_LABEL: "true", "app.kubernetes.io/managed-by": contract.MANAGER})
    if found is None:
        store.create(core, secret)
    else:
        store.replace(core, secret, found[1])


def grant_status(core: Any, custom: Any, body: Mapping[str, Any], settings: ServerSettings,
                 now: dt.datetime | None = None) -> Dict[str, Any]:
    """Make what the grant needs and return its status (without redemptions and links)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    meta = body["metadata"]
    previous = list(((body.get("status") or {}).get("conditions")) or [])
    out: Dict[str, Any] = {"observedGeneration": meta.get("generation")}
    try:
        spec = parse_grant(body)
    except SpecError as e:
        out["conditions"] = [condition(previous, False, "InvalidSpec", str(e), now, meta.get("generation"))]
        return out
    ensure_client_ca(core, body)
    ensure_token(core, body, settings, ensure_server_ca(core, settings).cert_pem)
    out["url"] = settings.url(spec.namespace, spec.name)
    out["expiresAt"] = stamp(expires_at(body, spec))
    mesh = _mesh_problem(custom, spec.namespace, spec.mesh_name)
    if mesh is not None:
        out["conditions"] = [condition(previous, False, mesh[0], mesh[1], now, meta.get("generation"))]
        return out
    ready, reason, message = redemption_state(spec, body, now)
    out["conditions"] = [condition(previous, ready, reason, message, now, meta.get("generation"))]
    return out


def _mesh_problem(custom: Any, namespace: str, mesh: str) -> tuple[str, str] | None:
    from kubernetes.client.rest import ApiException

    try:
        found = custom.get_namespaced_custom_object(contract.GROUP, contract.VERSION, namespace,
                                                    contract.MESH_PLURAL, mesh)
    except ApiException as e:
        if e.status == 404:
            return "MeshNotFound", f"RouterMesh {namespace}/{mesh} does not exist"
        raise
    try:
        parsed = parse_mesh(mesh, namespace, found.get("spec") or {})
    except SpecError as e:
        return "MeshInvalid", f"RouterMesh {mesh}: {e}"
    if not parsed.link_access.enabled:
        return "LinkAccessDisabled", f"RouterMesh {mesh} has no spec.linkAccess (type None)"
    return None
