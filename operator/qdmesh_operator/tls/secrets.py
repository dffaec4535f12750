"""The Secrets of mode Managed: ``<mesh>-inter-router-ca`` (ca.crt, ca.key: never mounted in
a pod) and ``<mesh>-inter-router-tls`` (tls.crt, tls.key, ca.crt: mounted in every router),
both owned by the RouterMesh.

Made once and then reused: each reconciliation reads them, and only writes when one is
missing or the routers' certificate must be renewed (near expiry, wrong names, not from the
CA).  A create that loses a race (another reconciliation, a restarted operator) reads what
won; a replace carries the resourceVersion it read, so two writers cannot both win."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from kubernetes.client.rest import ApiException

from .. import contract
from ..model.mesh import MeshSpec
from . import certs
from .certs import CertificateError, KeyPair


@dataclass
class ManagedTls:
    """The outcome: the fingerprint of the routers' certificate (the pod template carries it, so
    a renewed certificate rolls the routers) and Events to post as (type, reason, message)."""

    revision: str
    events: List[Tuple[str, str, str]] = field(default_factory=list)


def _read(core: Any, namespace: str, name: str) -> Tuple[Dict[str, bytes], str] | None:
    """A Secret's decoded data and resourceVersion, or None if there is none."""
    try:
        secret = core.read_namespaced_secret(name, namespace)
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    return data, str(secret.metadata.resource_version or "")


def _body(mesh: MeshSpec, name: str, type_: str, data: Mapping[str, bytes],
          owner: Dict[str, Any] | None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name, "namespace": mesh.namespace, "labels": contract.labels(mesh.name)}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": type_,
            "data": {k: base64.b64encode(v).decode() for k, v in sorted(data.items())}}


def _create(core: Any, body: Dict[str, Any]) -> bool:
    """Create a Secret; False if one of that name appeared meanwhile."""
    try:
        core.create_namespaced_secret(body["metadata"]["namespace"], body)
    except ApiException as e:
        if e.status == 409:
            return False
        raise
    return True


def _need(data: Mapping[str, bytes], keys: Tuple[str, ...], secret: str) -> None:
    missing = [k for k in keys if not data.get(k)]
    if missing:
        raise CertificateError(f"Secret {secret} lacks {', '.join(missing)}; delete it and the operator "
                               "makes a new one")


def _ensure_ca(core: Any, mesh: MeshSpec, owner: Dict[str, Any] | None, now: dt.datetime,
               events: List[Tuple[str, str, str]]) -> KeyPair:
    name = contract.inter_router_ca_secret(mesh.name)
    found = _read(core, mesh.namespace, name)
    if found is None:
        pair = certs.new_ca(f"{mesh.name} inter-router CA", now)
        if _create(core, _body(mesh, name, "Opaque", {"ca.crt": pair.cert_pem, "ca.key": pair.key_pem},
                               owner)):
            events.append(("Normal", "CertificateIssued", f"created the mesh's inter-router CA in Secret "
                           f"{name} (ECDSA P-256, valid {certs.CA_LIFETIME.days} days)"))
            return pair
        found = _read(core, mesh.namespace, name)
        if found is None:
            raise CertificateError(f"Secret {name} was created and deleted meanwhile; retrying")
    data = found[0]
    _need(data, ("ca.crt", "ca.key"), name)
    pair = KeyPair(data["ca.crt"], data["ca.key"])
    ca_cert, _ = certs.load_ca(pair, f"Secret {name}")
    if ca_cert.not_valid_after_utc - now < certs.RENEW_BEFORE:
        events.append(("Warning", "CAExpiring",
                       f"the inter-router CA in Secret {name} expires "
                       f"{ca_cert.not_valid_after_utc:%Y-%m-%d}: "
                       "delete the Secret to have a new CA made (routers then restart one at a time, and "
                       "until all have, old and new routers do not trust each other)"))
    return pair


def _leaf_reason(data: Mapping[str, bytes], ca: KeyPair, dns_names: List[str],
                 now: dt.datetime) -> str | None:
    if not data.get("tls.crt") or not data.get("tls.key"):
        return "it lacks tls.crt or tls.key"
    if data.get("ca.crt") != ca.cert_pem:
        return "its ca.crt is not the mesh CA"
    reason = certs.renewal_reason(data["tls.crt"], ca.cert_pem, dns_names, now)
    if reason is None and not certs.key_matches(data["tls.crt"], data["tls.key"]):
        return "tls.key is not the key of tls.crt"
    return reason


def ensure_managed_tls(core: Any, mesh: MeshSpec, owner: Dict[str, Any] | None,
                       now: dt.datetime | None = None) -> ManagedTls:
    """Make sure both Secrets exist and hold a good certificate; ``core`` is a CoreV1Api.
    Raises ApiException (Kubernetes refused) or CertificateError (unusable stored material)."""
    now = now or certs.utcnow()
    events: List[Tuple[str, str, str]] = []
    ca = _ensure_ca(core, mesh, owner, now, events)
    name = contract.inter_router_tls_secret(mesh.name)
    dns_names = certs.inter_router_dns_names(mesh.name, mesh.namespace)
    found = _read(core, mesh.namespace, name)
    reason = "missing" if found is None else _leaf_reason(found[0], ca, dns_names, now)
    if reason is None:
        assert found is not None
        return ManagedTls(certs.fingerprint(found[0]["tls.crt"]), events)
    leaf = certs.issue_leaf(ca, f"{mesh.name} inter-router", dns_names, now)
    body = _body(mesh, name, "kubernetes.io/tls",
                 {"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem, "ca.crt": ca.cert_pem}, owner)
    expires = certs.load_cert(leaf.cert_pem, "tls.crt").not_valid_after_utc
    if found is None:
        if not _create(core, body):  # made meanwhile by another reconciliation: use that one
            return ensure_managed_tls(core, mesh, owner, now)
        events.append(("Normal", "CertificateIssued", f"issued the routers' inter-router certificate in "
                       f"Secret {name} (valid until {expires:%Y-%m-%d})"))
    else:
        body["metadata"]["resourceVersion"] = found[1]
        core.replace_namespaced_secret(name, mesh.namespace, body)
        events.append(("Normal", "CertificateRenewed", f"renewed the routers' inter-router certificate in "
                       f"Secret {name} ({reason}); valid until {expires:%Y-%m-%d}; routers restart one at a "
                       "time to load it"))
    return ManagedTls(certs.fingerprint(leaf.cert_pem), events)
