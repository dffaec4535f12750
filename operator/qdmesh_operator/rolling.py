"""Rolling restarts one router at a time, each waiting until the mesh has reconverged.

The StatefulSet's RollingUpdate ``partition`` is the operator's gate: when the pod template
changes (image, pod settings, settings that need a restart), the partition is set so that only
the highest router restarts; the next one is released only once every restarted router is
ready on the new revision AND every router reaches every other router again over its own
inter-router links (read through management).  Pure: decides from what the reconciler read."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, Tuple

from .pod_problems import PodProblem

TEMPLATE_HASH = "qdmesh.io/template-hash"
HELD = "rolling restart held"
#: A rolling restart is due but waits for a maintenance window (spec.maintenanceTimeWindows):
#: the new pod template is applied with the partition at the mesh's size, so no router takes it.
PENDING = "rolling restart pending until a maintenance window"
#: On the StatefulSet while a rolling restart is pending (the partition alone does not say it
#: once the mesh has grown past it).
PENDING_ANNOTATION = "qdmesh.io/rolling-restart-pending"


@dataclass
class PodState:
    ordinal: int
    revision: str
    ready: bool
    #: The node the pod was scheduled to ("" while Pending).
    node: str = ""
    #: What keeps the pod from running (image, scheduling, crash loop), if anything.
    problem: PodProblem | None = None


def template_hash(stateful_set: Mapping[str, Any]) -> str:
    template = stateful_set["spec"]["template"]
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:16]


def next_partition(size: int, new_hash: str, *, live: Mapping[str, Any] | None, pods: Sequence[PodState],
                   converged: bool, window_open: bool = True) -> Tuple[int, str]:
    """(partition to apply, what is happening in words; empty when nothing rolls).
    ``window_open``: a rolling restart may start now (inside a maintenance window, or the
    mesh has none); one that has started goes on to its end regardless."""
    if live is None:
        return 0, ""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    strategy = ((live.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    current = int(strategy.get("partition") or 0)
    changed = annotations.get(TEMPLATE_HASH) != new_hash
    waiting = annotations.get(PENDING_ANNOTATION) == "true" or current >= size > 0
    if (changed or waiting) and not window_open:
        return size, PENDING
    if changed:
        first = max(size - 1, 0)
        return first, f"pod template changed: restarting router {first} first, then one at a time"
    if waiting:
        return size - 1, f"rolling restart starting: restarting router {size - 1} first, then one at a time"
    if current <= 0:
        return 0, ""
    target = str(((live.get("status") or {}).get("updateRevision")) or "")
    restarted = [p for p in pods if p.ordinal >= current]
    back = len(restarted) >= size - current and all(p.revision == target and p.ready for p in restarted)
    if back and converged:
        return current - 1, (f"router {current} is back and the mesh has reconverged: "
                             f"restarting router {current - 1}")
    waiting = "router restart" if not back else "the mesh to reconverge"
    return current, f"{HELD} at router {current}: waiting for {waiting}"
