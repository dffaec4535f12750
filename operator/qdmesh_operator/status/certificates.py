"""The RouterMesh's word on its routers' TLS material: a ``CertificatesLoaded`` condition (every
router that answers runs what its Secrets hold, or which ones wait for Kubernetes to update
their files, or cannot load at run time), and Events when routers load renewed material
without a restart.  Pure."""

from __future__ import annotations

import datetime as dt
from typing import Any, Dict, List, Mapping, Tuple

from ..apply.tls_reload import TlsReload
from . import kstatus

CERTIFICATES_LOADED = "CertificatesLoaded"
CURRENT = "AllRoutersCurrent"
WAITING = "WaitingForMountedFiles"
REFUSED = "ReloadRefused"


def _names(ids: List[str]) -> str:
    return ", ".join(sorted(ids)[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def verdict(reloads: Mapping[str, TlsReload]) -> Tuple[bool, str, str]:
    """(status, reason, message) of the condition."""
    refused = {rid: r.refused for rid, r in reloads.items() if r.refused}
    if refused:
        first = sorted(refused)[0]
        detail = next(iter(refused[first].values()))
        return False, REFUSED, (f"routers {_names(list(refused))} cannot load TLS material at run time "
                                f"({detail}); they load it when they restart (annotation "
                                "qdmesh.io/manual-rolling-update restarts them one at a time)")
    waiting = [rid for rid, r in reloads.items() if r.waiting]
    if waiting:
        return False, WAITING, (f"routers {_names(waiting)} wait for Kubernetes to update the files of "
                                "their mounted Secrets (usually within a minute); asked again at the "
                                "next reconciliation")
    return True, CURRENT, f"{len(reloads)} routers run the TLS material of their Secrets"


def condition(reloads: Mapping[str, TlsReload], generation: int,
              previous: List[Mapping[str, Any]]) -> Dict[str, Any]:
    status, reason, message = verdict(reloads)
    return kstatus.condition(CERTIFICATES_LOADED, status, reason=reason, message=message,
                             generation=generation, previous=previous)


def events(reloads: Mapping[str, TlsReload], previous: List[Mapping[str, Any]]) -> List[Tuple[str, str, str]]:
    """A Normal Event when routers loaded renewed material this time; a Warning when routers
    cannot, once (not at every reconciliation while the condition says so)."""
    found: List[Tuple[str, str, str]] = []
    loaded: Dict[str, List[str]] = {}
    for rid, r in reloads.items():
        for profile in r.loaded:
            loaded.setdefault(profile, []).append(rid)
    for profile, ids in sorted(loaded.items()):
        found.append(("Normal", "CertificateLoaded", f"routers {_names(ids)} loaded the renewed TLS material "
                      f"of sslProfile {profile} without a restart"))
    _, reason, message = verdict(reloads)
    old = next((c for c in previous if c.get("type") == CERTIFICATES_LOADED), None)
    if reason == REFUSED and (old is None or old.get("reason") != REFUSED):
        found.append(("Warning", REFUSED, message))
    return found


def expiry_list(expiries: Mapping[str, float]) -> List[Dict[str, str]]:
    """``status.certificates``: when each certificate the routers present or trust expires."""
    return [{"secret": secret, "notAfter": dt.datetime.fromtimestamp(when, dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")} for secret, when in sorted(expiries.items())]
