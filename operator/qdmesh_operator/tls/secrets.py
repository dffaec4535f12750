"""The Secrets of mode Managed: ``<mesh>-inter-router-ca`` (ca.crt, ca.key: never mounted in
a pod), ``<mesh>-inter-router-tls`` (tls.crt, tls.key, ca.crt: mounted in every interior
router) and, with edge groups, ``<mesh>-edge-tls`` (the same, for edge routers, issued by the
same CA), all owned by the RouterMesh.

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
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from kubernetes.client.rest import ApiException

from .. import contract
from ..kube import secrets as stored
from ..model.mesh import MeshSpec
from . import certs, rotation
from .certs import CertificateError
from .material import Material, of_files
from .rotation import CaSet


@dataclass
class ManagedTls:
    """The outcome: the revision of the routers' certificate (what a rotation step waits for
    every router to run) and Events to post as (type, reason, message)."""

    revision: str
    events: List[Tuple[str, str, str]] = field(default_factory=list)
    #: With edge groups: the fingerprint of the edge routers' certificate (their pod template).
    edge_revision: str | None = None
    #: When each certificate of these Secrets expires (Unix time), by Secret name.
    expiries: Dict[str, float] = field(default_factory=dict)
    #: What each leaf Secret now holds, as the routers that mount it report it.
    materials: Dict[str, Material] = field(default_factory=dict)


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


def _body(mesh: MeshSpec, name: str, *, type_: str, data: Mapping[str, bytes],
          owner: Dict[str, Any] | None) -> Dict[str, Any]:
    return stored.body(mesh.namespace, name, data, labels=contract.labels(mesh.name), owner=owner,
                       type_=type_)


_create = stored.create


def _ensure_ca(core: Any, mesh: MeshSpec, *, owner: Dict[str, Any] | None, now: dt.datetime,
               events: List[Tuple[str, str, str]]) -> Tuple[CaSet, str] | CaSet:
    """The mesh's CAs and the CA Secret's resourceVersion, or a CaSet just created."""
    name = contract.inter_router_ca_secret(mesh.name)
    found = _read(core, mesh.namespace, name)
    if found is None:
        pair = certs.new_ca(_ca_name(mesh), now)
        if _create(core, _body(mesh, name, type_="Opaque", data=CaSet(pair).to_data(), owner=owner)):
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


def ensure_managed_tls(core: Any, mesh: MeshSpec, *, owner: Dict[str, Any] | None,
                       now: dt.datetime | None = None, running: str | None = None,
                       running_edges: Sequence[str | None] = ()) -> ManagedTls:
    """Make sure the Secrets exist and hold a good certificate, and take the CA's rotation a
    step further when it is due; ``core`` is a CoreV1Api, ``running`` the revision every
    interior router runs (None while a rollout is under way), ``running_edges`` the revision
    each edge group runs (None for a group still rolling).  A rotation step waits for every
    router, interior and edge, to run with the trust the previous step gave it.  Raises
    ApiException (Kubernetes refused) or CertificateError (unusable stored material)."""
    now = now or certs.utcnow()
    events: List[Tuple[str, str, str]] = []
    made = _ensure_ca(core, mesh, owner=owner, now=now, events=events)
    name = contract.inter_router_tls_secret(mesh.name)
    found = _read(core, mesh.namespace, name)
    edge_name = contract.edge_tls_secret(mesh.name)
    edge_found = _read(core, mesh.namespace, edge_name) if mesh.edge_groups else None
    if isinstance(made, CaSet):
        cas = made
    else:
        cas, ca_version = made
        leaf_now = found[0].get("tls.crt") if found is not None else None
        rolled_out = leaf_now is not None and running == _revision(cas, leaf_now)
        if mesh.edge_groups:
            edge_now = edge_found[0].get("tls.crt") if edge_found is not None else None
            rolled_out = rolled_out and edge_now is not None and \
                all(r == _revision(cas, edge_now) for r in running_edges)
        stepped, event = rotation.next_step(cas, rolled_out, _ca_name(mesh), now)
        if event is not None:
            ca_secret = contract.inter_router_ca_secret(mesh.name)
            body = _body(mesh, ca_secret, type_="Opaque", data=stepped.to_data(), owner=owner)
            body["metadata"]["resourceVersion"] = ca_version
            core.replace_namespaced_secret(ca_secret, mesh.namespace, body)
            events.append(event)
            cas = stepped
    rotated = bool(events) and events[-1][1] == "CARotated"
    expiries: Dict[str, float] = {}
    materials: Dict[str, Material] = {}
    _expires(expiries, contract.inter_router_ca_secret(mesh.name), cas.signing.cert_pem)
    revision = _ensure_leaf(core, mesh, owner=owner, cas=cas, found=found, leaf_spec=_Leaf(
        name, f"{mesh.name} inter-router", certs.inter_router_dns_names(mesh.name, mesh.namespace),
        "the routers' inter-router certificate", "routers"), now=now, ca_rotated=rotated, events=events,
        expiries=expiries, materials=materials)
    if revision is None:  # made meanwhile by another reconciliation: use that one
        return ensure_managed_tls(core, mesh, owner=owner, now=now, running=running,
                                  running_edges=running_edges)
    managed = ManagedTls(revision, events, expiries=expiries, materials=materials)
    if mesh.edge_groups:
        edge_revision = _ensure_leaf(core, mesh, owner=owner, cas=cas, found=edge_found, leaf_spec=_Leaf(
            edge_name, f"{mesh.name} edge router", certs.edge_dns_names(mesh.name, mesh.namespace),
            "the edge routers' certificate", "edge routers"), now=now, ca_rotated=rotated, events=events,
            expiries=expiries, materials=materials)
        if edge_revision is None:
            return ensure_managed_tls(core, mesh, owner=owner, now=now, running=running,
                                      running_edges=running_edges)
        managed.edge_revision = edge_revision
    return managed


def _expires(expiries: Dict[str, float], secret: str, pem: bytes) -> None:
    when = certs.not_after(pem)
    if when is not None:
        expiries[secret] = when


@dataclass
class _Leaf:
    """One certificate the CA issues: its Secret, subject, names, and how Events call it."""

    secret: str
    common_name: str
    dns_names: List[str]
    what: str
    holders: str


def _ensure_leaf(core: Any, mesh: MeshSpec, *, owner: Dict[str, Any] | None, cas: CaSet,
                 found: Tuple[Dict[str, bytes], str] | None, leaf_spec: _Leaf, now: dt.datetime,
                 ca_rotated: bool, events: List[Tuple[str, str, str]],
                 expiries: Dict[str, float], materials: Dict[str, Material]) -> str | None:
    """The leaf's revision after making, renewing or re-bundling it; None when a create lost
    a race (the caller starts over with what won)."""
    name = leaf_spec.secret
    reason = "missing" if found is None else _leaf_reason(found[0], cas, leaf_spec.dns_names, now)
    if reason is not None and ca_rotated:
        reason = "the mesh's new CA signs it from now on"
    bundle = cas.trust_bundle()
    if reason is None:
        assert found is not None
        if found[0].get("ca.crt") != bundle:  # a rotation step: same certificate, other CAs trusted
            body = _body(mesh, name, type_="kubernetes.io/tls", data={**found[0], "ca.crt": bundle},
                         owner=owner)
            body["metadata"]["resourceVersion"] = found[1]
            core.replace_namespaced_secret(name, mesh.namespace, body)
        _expires(expiries, leaf_spec.secret, found[0]["tls.crt"])
        materials[name] = of_files({**found[0], "ca.crt": bundle})
        return cas.revision(found[0]["tls.crt"])
    leaf = certs.issue_leaf(cas.signing, leaf_spec.common_name, dns_names=leaf_spec.dns_names, now=now)
    body = _body(mesh, name, type_="kubernetes.io/tls",
                 data={"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem, "ca.crt": bundle}, owner=owner)
    expires = certs.load_cert(leaf.cert_pem, "tls.crt").not_valid_after_utc
    if found is None:
        if not _create(core, body):
            return None
        events.append(("Normal", "CertificateIssued", f"issued {leaf_spec.what} in "
                       f"Secret {name} (valid until {expires:%Y-%m-%d})"))
    else:
        body["metadata"]["resourceVersion"] = found[1]
        core.replace_namespaced_secret(name, mesh.namespace, body)
        events.append(("Normal", "CertificateRenewed", f"renewed {leaf_spec.what} in "
                       f"Secret {name} ({reason}); valid until {expires:%Y-%m-%d}; {leaf_spec.holders} "
                       "load it without a restart"))
    _expires(expiries, leaf_spec.secret, leaf.cert_pem)
    materials[name] = of_files({"tls.crt": leaf.cert_pem, "ca.crt": bundle})
    return cas.revision(leaf.cert_pem)


def _revision(cas: CaSet, leaf_pem: bytes) -> str | None:
    try:
        return cas.revision(leaf_pem)
    except CertificateError:
        return None
