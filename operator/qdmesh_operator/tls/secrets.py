"""The Secrets of mode Managed: ``<mesh>-inter-router-ca`` (ca.crt, ca.key: never mounted in
a pod) and ``<mesh>-inter-router-tls`` (tls.crt, tls.key, ca.crt: mounted in every router),
both owned by the RouterMesh.

Made once and then reused: each reconciliation reads them, and only writes when one is
missing, the routers' certificate must be renewed (near expiry, wrong names, not from the
CA), or the CA's rotation (rotation.py) takes a step; the CA Secret then also holds
``next-ca.crt``/``next-ca.key`` or ``previous-ca.crt``, and the routers' ``ca.crt`` every CA
they must trust.  A create that loses a race (another reconciliation, a restarted operator) reads what
won; a replace carries the resourceVersion it read, so two writers cannot both win."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from kubernetes.client.rest import ApiException

from .. import contract
from ..model.mesh import MeshSpec
from . import certs, rotation
from .certs import CertificateError
from .rotation import CaSet


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


def _ensure_ca(core: Any, mesh: MeshSpec, owner: Dict[str, Any] | None, now: dt.datetime,
               events: List[Tuple[str, str, str]]) -> Tuple[CaSet, str] | CaSet:
    """The mesh's CAs and the CA Secret's resourceVersion, or a CaSet just created."""
    name = contract.inter_router_ca_secret(mesh.name)
    found = _read(core, mesh.namespace, name)
    if found is None:
        pair = certs.new_ca(_ca_name(mesh), now)
        if _create(core, _body(mesh, name, "Opaque", CaSet(pair).to_data(), owner)):
            events.append(("Normal", "CertificateIssued", f"created the mesh's inter-router CA in Secret "
                           f"{name} (ECDSA P-256, valid {certs.CA_LIFETIME.days} days)"))
            return CaSet(pair)
        found = _read(core, mesh.namespace, name)
        if found is None:
            raise CertificateError(f"Secret {name} was created and deleted meanwhile; retrying")
    return CaSet.from_data(found[0], name), found[1]


def _ca_name(mesh: MeshSpec) -> str:
    return f"{mesh.name} inter-router CA"


def _leaf_reason(data: Mapping[str, bytes], cas: CaSet, dns_names: List[str],
                 now: dt.datetime) -> str | None:
    if not data.get("tls.crt") or not data.get("tls.key"):
        return "it lacks tls.crt or tls.key"
    reason = certs.renewal_reason(data["tls.crt"], cas.signing.cert_pem, dns_names, now)
    if reason is None and not certs.key_matches(data["tls.crt"], data["tls.key"]):
        return "tls.key is not the key of tls.crt"
    return reason


def ensure_managed_tls(core: Any, mesh: MeshSpec, owner: Dict[str, Any] | None,
                       now: dt.datetime | None = None, running: str | None = None) -> ManagedTls:
    """Make sure both Secrets exist and hold a good certificate, and take the CA's rotation a
    step further when it is due; ``core`` is a CoreV1Api, ``running`` the revision every
    router runs (None while a rollout is under way).  Raises ApiException (Kubernetes refused)
    or CertificateError (unusable stored material)."""
    now = now or certs.utcnow()
    events: List[Tuple[str, str, str]] = []
    made = _ensure_ca(core, mesh, owner, now, events)
    name = contract.inter_router_tls_secret(mesh.name)
    found = _read(core, mesh.namespace, name)
    if isinstance(made, CaSet):
        cas = made
    else:
        cas, ca_version = made
        leaf_now = found[0].get("tls.crt") if found is not None else None
        rolled_out = leaf_now is not None and running == _revision(cas, leaf_now)
        stepped, event = rotation.next_step(cas, rolled_out, _ca_name(mesh), now)
        if event is not None:
            ca_secret = contract.inter_router_ca_secret(mesh.name)
            body = _body(mesh, ca_secret, "Opaque", stepped.to_data(), owner)
            body["metadata"]["resourceVersion"] = ca_version
            core.replace_namespaced_secret(ca_secret, mesh.namespace, body)
            events.append(event)
            cas = stepped
    dns_names = certs.inter_router_dns_names(mesh.name, mesh.namespace)
    reason = "missing" if found is None else _leaf_reason(found[0], cas, dns_names, now)
    if reason is not None and events and events[-1][1] == "CARotated":
        reason = "the mesh's new CA signs it from now on"
    bundle = cas.trust_bundle()
    if reason is None:
        assert found is not None
        if found[0].get("ca.crt") != bundle:  # a rotation step: same certificate, other CAs trusted
            body = _body(mesh, name, "kubernetes.io/tls", {**found[0], "ca.crt": bundle}, owner)
            body["metadata"]["resourceVersion"] = found[1]
            core.replace_namespaced_secret(name, mesh.namespace, body)
        return ManagedTls(cas.revision(found[0]["tls.crt"]), events)
    leaf = certs.issue_leaf(cas.signing, f"{mesh.name} inter-router", dns_names, now)
    body = _body(mesh, name, "kubernetes.io/tls",
                 {"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem, "ca.crt": bundle}, owner)
    expires = certs.load_cert(leaf.cert_pem, "tls.crt").not_valid_after_utc
    if found is None:
        if not _create(core, body):  # made meanwhile by another reconciliation: use that one
            return ensure_managed_tls(core, mesh, owner, now, running)
        events.append(("Normal", "CertificateIssued", f"issued the routers' inter-router certificate in "
                       f"Secret {name} (valid until {expires:%Y-%m-%d})"))
    else:
        body["metadata"]["resourceVersion"] = found[1]
        core.replace_namespaced_secret(name, mesh.namespace, body)
        events.append(("Normal", "CertificateRenewed", f"renewed the routers' inter-router certificate in "
                       f"Secret {name} ({reason}); valid until {expires:%Y-%m-%d}; routers restart one at a "
                       "time to load it"))
    return ManagedTls(cas.revision(leaf.cert_pem), events)


def _revision(cas: CaSet, leaf_pem: bytes) -> str | None:
    try:
        return cas.revision(leaf_pem)
    except CertificateError:
        return None
