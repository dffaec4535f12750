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


def rolled_out_annotation(live: Mapping[str, Any] | None, size: int, annotation: str) -> str | None:
    """The value of a pod-template annotation that every router runs with, or None while a
    rollout is under way (or nothing runs yet): the StatefulSet has seen its latest spec, its
    current revision is the update revision, and all ``size`` routers are updated and ready."""
    if live is None:
        return None
    spec = live.get("spec") or {}
    status = live.get("status") or {}
    generation = (live.get("metadata") or {}).get("generation")
    rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    revision = status.get("updateRevision")
    if (status.get("observedGeneration") != generation or int(rolling.get("partition") or 0) != 0
            or not revision or status.get("currentRevision") != revision
            or min(int(status.get("updatedReplicas") or 0), int(status.get("readyReplicas") or 0)) < size):
        return None
    annotations = ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    value = annotations.get(annotation)
    return str(value) if value is not None else None


def workload_rolled_out_annotation(live: Mapping[str, Any], annotation: str) -> str | None:
    """As rolled_out_annotation, for an edge group's Deployment or DaemonSet: the value of a
    pod-template annotation every one of its pods runs with, or None while it rolls."""
    spec = live.get("spec") or {}
    status = live.get("status") or {}
    if status.get("observedGeneration") != (live.get("metadata") or {}).get("generation"):
        return None
    if live.get("kind") == "DaemonSet":
        desired = int(status.get("desiredNumberScheduled") or 0)
        done = min(int(status.get("updatedNumberScheduled") or 0), int(status.get("numberReady") or 0))
        extra = int(status.get("currentNumberScheduled") or 0) > desired
    else:
        desired = int(spec.get("replicas") or 0)
        done = min(int(status.get("updatedReplicas") or 0), int(status.get("readyReplicas") or 0))
        extra = int(status.get("replicas") or 0) > desired
    if done < desired or extra:
        return None
    annotations = ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    value = annotations.get(annotation)
    return str(value) if value is not None else None
