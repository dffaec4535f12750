"""MeshAccessGrant: the typed spec, and the Ready condition its status carries.  Pure."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping

from ..linking.wire import ROLES
from ..model.errors import SpecError
from ..model.fields import Fields

DEFAULT_WINDOW = "15m"
MAX_WINDOW = dt.timedelta(days=30)
_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


@dataclass(frozen=True)
class GrantSpec:
    name: str
    namespace: str
    mesh_name: str
    redemptions_allowed: int = 1
    expiration_window: dt.timedelta = dt.timedelta(minutes=15)
    role: str = "inter-router"


def parse_duration(text: str, where: str) -> dt.timedelta:
    """``15m``, ``1h``, ``24h``, ``1h30m``, ``2d``, ``90s``: at least 1 s, at most 30 days."""
    match = _DURATION.fullmatch(text)
    if not text or match is None or not any(match.groups()):
        raise SpecError(where, f"{text!r} is not a duration like 15m, 1h or 24h")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    window = dt.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if not dt.timedelta(seconds=1) <= window <= MAX_WINDOW:
        raise SpecError(where, f"{text!r} must be between 1s and 30d")
    return window


def parse_grant(body: Mapping[str, Any]) -> GrantSpec:
    meta = body.get("metadata") or {}
    f = Fields(body.get("spec"), "spec")
    return GrantSpec(
        name=str(meta.get("name")), namespace=str(meta.get("namespace")),
        mesh_name=f.need_text("meshName", max_length=63, pattern=r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"),
        redemptions_allowed=f.need_integer("redemptionsAllowed", default=1, minimum=1, maximum=100),
        expiration_window=parse_duration(f.text("expirationWindow", default=DEFAULT_WINDOW, max_length=32)
                                         or DEFAULT_WINDOW, f.at("expirationWindow")),
        role=f.choice("role", ROLES, default="inter-router") or "inter-router")


def created_at(body: Mapping[str, Any]) -> dt.datetime:
    stamp = str((body.get("metadata") or {}).get("creationTimestamp") or "")
    try:
        return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return dt.datetime.now(dt.timezone.utc)


def expires_at(body: Mapping[str, Any], spec: GrantSpec) -> dt.datetime:
    return created_at(body) + spec.expiration_window


def stamp(when: dt.datetime) -> str:
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(previous: List[Mapping[str, Any]], ready: bool, reason: str, message: str,
              now: dt.datetime, generation: Any = None) -> Dict[str, Any]:
    """The Ready condition; its lastTransitionTime kept while its status does not change."""
    status = "True" if ready else "False"
    before = next((c for c in previous if c.get("type") == "Ready"), None)
    since = before.get("lastTransitionTime") if before and before.get("status") == status else None
    out = {"type": "Ready", "status": status, "reason": reason, "message": message,
           "lastTransitionTime": since or stamp(now)}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def redemption_state(spec: GrantSpec, body: Mapping[str, Any], now: dt.datetime) -> tuple[bool, str, str]:
    """(ready, reason, message) as far as the grant itself says: expired, exhausted, or open."""
    used = int(((body.get("status") or {}).get("redemptions")) or 0)
    expiry = expires_at(body, spec)
    if now >= expiry:
        return False, "Expired", f"expired at {stamp(expiry)}; existing links stay until the grant is deleted"
    if used >= spec.redemptions_allowed:
        return False, "Exhausted", (f"all {spec.redemptions_allowed} redemptions used; existing links stay "
                                    "until the grant is deleted")
    left = spec.redemptions_allowed - used
    return True, "Ready", f"{left} redemption{'s' if left != 1 else ''} left until {stamp(expiry)}"
