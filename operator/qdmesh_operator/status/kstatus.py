"""Status the way Flux's kstatus and Argo CD read it: ``Ready``, ``Reconciling`` and ``Stalled``
conditions with reasons, messages and observedGeneration.  Pure functions of what happened."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence

from .. import contract

READY = "Ready"
RECONCILING = "Reconciling"
STALLED = "Stalled"
MESH_CONVERGED = "MeshConverged"
#: True while routers that ran are lost (with their node, pod or management); kstatus and Argo
#: CD read only Ready/Reconciling/Stalled, so this one only adds detail.
DEGRADED = "Degraded"

# Reasons (CamelCase, as conditions want them).
APPLIED = "Applied"
PROGRESSING = "Progressing"
ROUTERS_NOT_READY = "RoutersNotReady"
ROLLING_RESTART = "RollingRestart"
ROUTER_UNREACHABLE = contract.ROUTER_UNREACHABLE
INVALID_SPEC = "InvalidSpec"
MESH_NOT_FOUND = "MeshNotFound"
UNKNOWN_REFERENCE = "UnknownReference"
APPLY_FAILED = "ApplyFailed"
EDGES_NOT_READY = "EdgesNotReady"
ROUTERS_LOST = "RoutersLost"
#: Routers of the mesh that cannot reach each other through it (the canary's probes).
CANARY_FAILED = "CanaryFailed"
#: Every node of the mesh not ready, its routers answering: Kubernetes' control plane was away.
NODES_NOT_READY = "NodesNotReady"


#: Status fields every status written keeps from the last one unless it says otherwise.
KEPT = ("routerImage",)


@dataclass
class Verdict:
    """Where a resource stands: ``ready``, ``progressing`` (will get there by itself) or
    ``stalled`` (needs a change from the user)."""

    state: str
    reason: str
    message: str

    @classmethod
    def ready(cls, message: str) -> Verdict:
        return cls("ready", APPLIED, message)

    @classmethod
    def progressing(cls, reason: str, message: str) -> Verdict:
        return cls("progressing", reason, message)

    @classmethod
    def stalled(cls, reason: str, message: str) -> Verdict:
        return cls("stalled", reason, message)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, status: bool | None, *, reason: str, message: str, generation: int,
              previous: Sequence[Mapping[str, Any]], when: str | None = None) -> Dict[str, Any]:
    """One condition (``status`` None: Unknown); ``lastTransitionTime`` moves only when
    ``status`` changes."""
    text = "Unknown" if status is None else "True" if status else "False"
    old = next((c for c in previous if c.get("type") == type_), None)
    changed = old is None or old.get("status") != text
    stamp = (when or now()) if changed else str(old.get("lastTransitionTime") or when or now())  # type: ignore[union-attr]
    return {"type": type_, "status": text, "reason": reason, "message": message[:32000],
            "lastTransitionTime": stamp, "observedGeneration": generation}


def conditions(verdict: Verdict, generation: int, previous: Sequence[Mapping[str, Any]] = (),
               when: str | None = None) -> List[Dict[str, Any]]:
    ready = verdict.state == "ready"
    calm = APPLIED if ready else verdict.reason  # reason of the conditions that are False
    reconciling = verdict.state == "progressing"
    stalled = verdict.state == "stalled"
    return [
        condition(READY, ready, reason=verdict.reason, message=verdict.message, generation=generation,
                  previous=previous, when=when),
        condition(RECONCILING, reconciling, reason=verdict.reason if reconciling else calm,
                  message=verdict.message if reconciling else "", generation=generation,
                  previous=previous, when=when),
        condition(STALLED, stalled, reason=verdict.reason if stalled else calm,
                  message=verdict.message if stalled else "", generation=generation,
                  previous=previous, when=when),
    ]


def status_of(verdict: Verdict, generation: int, previous: Mapping[str, Any] | None = None,
              **extra: Any) -> Dict[str, Any]:
    """A whole status (what the operator writes): observedGeneration, conditions, extras."""
    old = list((previous or {}).get("conditions") or [])
    # The image the mesh is pinned to outlives a status that does not restate it (a bad spec).
    kept = {key: (previous or {})[key] for key in KEPT if (previous or {}).get(key) and key not in extra}
    return {"observedGeneration": generation, "conditions": conditions(verdict, generation, old),
            **kept, **extra}
