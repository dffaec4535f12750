"""Edge groups' rollouts gated by maintenance windows (spec.maintenanceTimeWindows), as the
interior routers' rolling restart is (rolling.py).

An edge group's Deployment or DaemonSet replaces its pods one at a time on a pod template
change (render/edges.py).  Outside every window a change is applied but held: a Deployment
``paused`` (its new template stored, no pod replaced), a DaemonSet with the ``OnDelete``
strategy (pods replaced only when deleted); the workload carries PENDING_ANNOTATION until a
window opens, when the rollout goes on, one router at a time, to its end.  A rollout that has
started goes on regardless.  The rendered template's hash is kept on the workload to tell a
change from a re-render of the same template.  Pure."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Mapping

from .rolling import PENDING_ANNOTATION, TEMPLATE_HASH


def _hash(template: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:16]


def gate(workload: Dict[str, Any], live: Mapping[str, Any] | None, window_open: bool) -> bool:
    """Stamp ``workload`` (rendered, about to be applied) with its template's hash and, if its
    template changed since ``live`` (or a change waits already) and no window is open, hold
    it.  True when held."""
    new_hash = _hash(workload["spec"]["template"])
    annotations = workload["metadata"].setdefault("annotations", {})
    annotations[TEMPLATE_HASH] = new_hash
    if live is None or window_open:
        return False  # a new group starts at once; in a window, what waited goes on
    live_annotations = (live.get("metadata") or {}).get("annotations") or {}
    changed = live_annotations.get(TEMPLATE_HASH) != new_hash
    waiting = live_annotations.get(PENDING_ANNOTATION) == "true"
    if not (changed or waiting):
        return False
    annotations[PENDING_ANNOTATION] = "true"
    if workload["kind"] == "Deployment":
        workload["spec"]["paused"] = True
    else:
        workload["spec"]["updateStrategy"] = {"type": "OnDelete"}
    return True
