"""The report of a paused RouterMesh (annotation qdmesh.io/pause-reconciliation: "true"), and
what its resumption says.  Paused, the operator changes nothing for the mesh: its status keeps
the observedGeneration of the last spec it applied and every condition as it was (``Ready``
included), with ``ReconciliationPaused=True`` beside them (Strimzi's condition); its routing
resources say the same.  Pure."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .. import contract
from ..operations import PAUSE_ANNOTATION
from . import kstatus
from .report import Event, Report, ref

RECONCILIATION_PAUSED = "ReconciliationPaused"
PAUSED_MESSAGE = (f"{PAUSE_ANNOTATION} is \"true\": the operator changes nothing for this mesh (its objects, "
                  "its routers' configuration, rolling restarts) until the annotation is removed")


def was_paused(body: Mapping[str, Any]) -> bool:
    """Whether the last status written says the mesh was paused."""
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c.get("type") == RECONCILIATION_PAUSED and c.get("status") == "True" for c in conditions)


def _paused_status(body: Mapping[str, Any], message: str) -> Dict[str, Any]:
    previous = copy.deepcopy(dict(body.get("status") or {}))
    conditions: List[Dict[str, Any]] = [c for c in previous.get("conditions") or []
                                        if c.get("type") != RECONCILIATION_PAUSED]
    old = previous.get("conditions") or []
    generation = int(previous.get("observedGeneration") or 0)
    conditions.append(kstatus.condition(RECONCILIATION_PAUSED, True, reason=RECONCILIATION_PAUSED,
                                        message=message, generation=generation, previous=old))
    previous["observedGeneration"] = generation
    previous["conditions"] = conditions
    return previous


def paused_report(body: Mapping[str, Any], routing: Sequence[Tuple[str, Mapping[str, Any]]]) -> Report:
    """``routing``: (plural, body) of each routing resource naming the mesh; they are applied
    through the mesh, so they are paused with it."""
    report = Report()
    name = str(body["metadata"]["name"])
    report.statuses[(contract.MESH_PLURAL, name)] = _paused_status(body, PAUSED_MESSAGE)
    for plural, item in routing:
        report.statuses[(plural, str(item["metadata"]["name"]))] = _paused_status(
            item, f"RouterMesh {name} is paused ({PAUSE_ANNOTATION}): this resource is not applied meanwhile")
    if not was_paused(body):
        report.events.append(Event(ref(body), "Normal", RECONCILIATION_PAUSED, PAUSED_MESSAGE))
    return report


def resumed_event(body: Mapping[str, Any]) -> Event | None:
    """An Event when the reconciliation after a pause applies what changed meanwhile."""
    if not was_paused(body):
        return None
    return Event(ref(body), "Normal", "ReconciliationResumed",
                 f"{PAUSE_ANNOTATION} removed: applying what changed while the mesh was paused")
