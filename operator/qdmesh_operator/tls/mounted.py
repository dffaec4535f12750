"""What the routers read from Secrets the operator does not write: listener and connector TLS
Secrets, the inter-router Secret of modes Secret and CertManager, and SASL password keys.

Routers read these only when they start (as qdrouterd does), so a renewed certificate (by
cert-manager, or by hand) must restart them.  A digest of the Secrets' contents goes into the
pod template: when it changes, the routers roll one at a time."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any, Dict, List, Set, Tuple

from kubernetes.client.rest import ApiException

from .. import contract
from ..model.mesh import MeshSpec
from . import certs


def mounted(mesh: MeshSpec) -> List[Tuple[str, str | None]]:
    """(Secret, key or None for every key) the routers read, each once, sorted."""
    wanted: Set[Tuple[str, str | None]] = {(name, None) for name in mesh.tls_secrets()}
    tls = mesh.inter_router_tls
    if tls.mode == "Secret" and tls.secret_name:
        wanted.add((tls.secret_name, None))
    elif tls.mode == "CertManager":
        wanted.add((contract.inter_router_tls_secret(mesh.name), None))
    for c in mesh.connectors:
        if c.sasl_password is not None and (c.sasl_password.name, None) not in wanted:
            wanted.add((c.sasl_password.name, c.sasl_password.key))
    return sorted(wanted, key=lambda item: (item[0], item[1] or ""))


def edge_mounted(mesh: MeshSpec) -> List[Tuple[str, str | None]]:
    """What edge routers read from Secrets the operator does not write: the mesh's certificate
    in modes Secret and CertManager (nothing of the interior routers' listeners or brokers)."""
    tls = mesh.inter_router_tls
    if not mesh.edge_groups:
        return []
    if tls.mode == "Secret" and tls.secret_name:
        return [(tls.secret_name, None)]
    if tls.mode == "CertManager":
        return [(contract.inter_router_tls_secret(mesh.name), None)]
    return []


def digest(core: Any, mesh: MeshSpec, wanted: List[Tuple[str, str | None]] | None = None,
           expiries: Dict[str, float] | None = None) -> str | None:
    """A short digest of what the routers read from those Secrets (``wanted``: mounted(mesh)
    by default); None when there are none, or when the operator may not read Secrets (then
    renewals apply at the next restart).  ``expiries`` gets when each Secret's ``tls.crt``
    expires (Unix time), by Secret name."""
    wanted = mounted(mesh) if wanted is None else wanted
    if not wanted:
        return None
    h = hashlib.sha256()
    for name, key in wanted:
        try:
            data = core.read_namespaced_secret(name, mesh.namespace).data or {}
        except ApiException as e:
            if e.status == 403:
                return None
            if e.status != 404:
                raise
            h.update(f"{name}: missing\n".encode())
            continue
        for k in sorted(data):
            if key is None or k == key:
                h.update(f"{name}/{k}={data[k]}\n".encode())
        if expiries is not None and data.get("tls.crt"):
            try:
                when = certs.not_after(base64.b64decode(data["tls.crt"]))
            except binascii.Error:
                when = None
            if when is not None:
                expiries[name] = when
    return h.hexdigest()[:16]
