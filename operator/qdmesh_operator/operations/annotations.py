"""The annotations a user puts on a RouterMesh to drive the operator (Strimzi's names, in the
qdmesh.io group), and the one the operator puts on the router pods for a manual roll."""

from __future__ import annotations

from typing import Any, Mapping

#: "true": the operator changes nothing for the mesh (no writes to its objects, no management
#: changes, no rolls) until the annotation goes (Strimzi: strimzi.io/pause-reconciliation).
PAUSE_ANNOTATION = "qdmesh.io/pause-reconciliation"
#: "true": one rolling restart of every router, one at a time (Strimzi:
#: strimzi.io/manual-rolling-update); the operator removes it once the roll has started.
MANUAL_ROLL_ANNOTATION = "qdmesh.io/manual-rolling-update"
#: On the routers' pod template: when the last manual roll was asked for.  Changing it is what
#: rolls the routers; it is kept from the running StatefulSet otherwise.
RESTARTED_AT_ANNOTATION = "qdmesh.io/restarted-at"


def _annotation(body: Mapping[str, Any], key: str) -> str:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(key) or "").strip().lower()


def paused(body: Mapping[str, Any]) -> bool:
    """Whether the RouterMesh ``body`` carries the pause annotation set to "true"."""
    return _annotation(body, PAUSE_ANNOTATION) == "true"


def manual_roll_requested(body: Mapping[str, Any]) -> bool:
    """Whether the RouterMesh ``body`` asks for a manual rolling update."""
    return _annotation(body, MANUAL_ROLL_ANNOTATION) == "true"


def restarted_at(workload: Mapping[str, Any] | None) -> str | None:
    """The manual-roll stamp on a live workload's pod template (kept unless a new roll is
    asked for: a workload without one is not given one, so nothing rolls)."""
    template = ((workload or {}).get("spec") or {}).get("template") or {}
    value = ((template.get("metadata") or {}).get("annotations") or {}).get(RESTARTED_AT_ANNOTATION)
    return str(value) if value else None
