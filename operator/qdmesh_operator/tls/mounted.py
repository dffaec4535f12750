"""What the routers read from Secrets the operator does not write: listener and connector TLS
Secrets, the inter-router Secret of modes Secret and CertManager, and SASL password keys.

TLS material is loaded at run time (tls/live.py): what each Secret holds is read here and the
apply stage has the routers load it.  A SASL password reaches a router only through its
environment, when it starts: a digest of those keys goes into the pod template, so a changed
password rolls the routers one at a time."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any, Dict, List, Sequence, Tuple

from kubernetes.client.rest import ApiException

from ..model.mesh import MeshSpec
from . import certs
from .material import Material, of_secret_data


def password_keys(mesh: MeshSpec) -> List[Tuple[str, str]]:
    """(Secret, key) of every SASL password the routers read at start, each once, sorted."""
    return sorted({(c.sasl_password.name, c.sasl_password.key) for c in mesh.connectors
                   if c.sasl_password is not None})


def _data(core: Any, namespace: str, name: str) -> Dict[str, str] | None:
    """A Secret's data (base64), None if there is none; raises ApiException (403 included)."""
    try:
        return dict(core.read_namespaced_secret(name, namespace).data or {})
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def password_digest(core: Any, mesh: MeshSpec) -> str | None:
    """A short digest of the SASL passwords the routers read; None when there are none, or
    when the operator may not read Secrets (then a changed password applies at the next
    restart)."""
    wanted = password_keys(mesh)
    if not wanted:
        return None
    h = hashlib.sha256()
    for name, key in wanted:
        try:
            data = _data(core, mesh.namespace, name)
        except ApiException as e:
            if e.status == 403:
                return None
            raise
        h.update(f"{name}/{key}={(data or {}).get(key, 'missing')}\n".encode())
    return h.hexdigest()[:16]


def materials(core: Any, namespace: str, secrets: Sequence[str],
              expiries: Dict[str, float]) -> Dict[str, Material]:
    """What each TLS Secret holds, by name (missing, unreadable or forbidden ones left out:
    the routers keep what they run).  ``expiries`` gets when each ``tls.crt`` expires (Unix
    time), by Secret name."""
    found: Dict[str, Material] = {}
    for name in secrets:
        try:
            data = _data(core, namespace, name)
        except ApiException as e:
            if e.status == 403:
                return found
            raise
        if not data:
            continue
        material = of_secret_data(data)
        if material is not None:
            found[name] = material
        if data.get("tls.crt"):
            try:
                when = certs.not_after(base64.b64decode(data["tls.crt"]))
            except binascii.Error:
                when = None
            if when is not None:
                expiries[name] = when
    return found
