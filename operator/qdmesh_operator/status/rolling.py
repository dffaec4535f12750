"""What a RouterMesh's status and Events say about a rolling restart: why it is due (which
fields changed and why they need a restart: operations/reasons.py), whether it waits for a
maintenance window, and one Event per step.  Pure."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ..apply.mesh import Applied
from ..rolling import HELD, PENDING
from . import kstatus
from .report import Event, ref

#: Condition: a rolling restart is due and waits for a maintenance window.  The mesh runs as
#: before meanwhile (its live changes apply), so it does not make Ready False.
ROLLING_RESTART_PENDING = "RollingRestartPending"


def pending(applied: Applied) -> bool:
    return applied.rolling == PENDING


def roll_reasons(previous: Mapping[str, Any], applied: Applied) -> List[str]:
    """Why the roll under way (or pending) is: as the last status said (a roll takes several
    reconciliations), with what changed the pod template this time added (a change during a
    roll or while it waits starts it again, for both)."""
    said = [str(r) for r in ((previous.get("rollingRestart") or {}).get("reasons") or [])]
    return said + [r for r in applied.roll_reasons if r not in said]


def _edge_reasons(applied: Applied) -> List[str]:
    """Edge groups whose pod template change waits for a window (edge_rollout.py)."""
    return [f"edge group {group}: pod template changed" for group in applied.edge_pending]


def rolling_status(previous: Mapping[str, Any], applied: Applied) -> Dict[str, Any] | None:
    """status.rollingRestart, or None (the field removed) when nothing rolls."""
    if not applied.rolling:
        if applied.edge_pending:  # only edge groups wait
            return {"state": "Pending", "reasons": _edge_reasons(applied), "message": PENDING}
        return None
    reasons = roll_reasons(previous, applied)
    return {"state": "Pending" if pending(applied) else "Rolling",
            "reasons": reasons + [r for r in _edge_reasons(applied) if r not in reasons],
            "message": applied.rolling}


def pending_condition(previous: Mapping[str, Any], applied: Applied, windows: List[str],
                      generation: int) -> Dict[str, Any] | None:
    """RollingRestartPending: the interior routers' roll, or edge groups' rollouts, or both,
    wait for a maintenance window."""
    if not pending(applied) and not applied.edge_pending:
        return None
    interior = (roll_reasons(previous, applied) or ["the pod template changed"]) if pending(applied) else []
    reasons = "; ".join(interior + _edge_reasons(applied))
    return kstatus.condition(
        ROLLING_RESTART_PENDING, True, reason="OutsideMaintenanceWindow",
        message=f"{PENDING} ({', '.join(repr(w) for w in windows)}, UTC): {reasons}",
        generation=generation, previous=previous.get("conditions") or [])


def rolling_event(body: Mapping[str, Any], applied: Applied) -> Event | None:
    """One Event per step of a rolling restart, not one per check while it is held or pending
    (a pending roll is announced when it becomes due)."""
    rolling = applied.rolling
    if not rolling or rolling.startswith(HELD) or (rolling == PENDING and not applied.roll_reasons):
        return None
    why = "; ".join(roll_reasons((body.get("status") or {}), applied)) or "the pod template changed"
    return Event(ref(body), "Normal", "RollingRestart", f"{rolling}: {why}")
