"""Whether traffic can reach a routing resource's destination, not only whether the resource is
applied: the ``Reachable`` condition of a LinkRoute and of an AutoLink, from the state each
router's management reports (``operStatus``).  Pure.

- A LinkRoute is reachable when a router of the mesh has its broker or container connected
  (its linkRoute entities are ``active`` there): the mesh's routing then carries its prefix to
  every router.  Not reachable names what no router is connected to.
- An AutoLink is reachable when its link is ``active`` on every router that has it; otherwise
  the message names each router whose link is not, with its state and last error.

Routers that do not answer leave the condition ``Unknown``."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from . import kstatus as status

REACHABLE = "Reachable"
ROUTE_CONNECTED = "RouteContainerConnected"
NO_ROUTE_CONTAINER = "NoRouteContainer"
AUTO_LINKS_ACTIVE = "AutoLinksActive"
AUTO_LINK_INACTIVE = "AutoLinkInactive"
NOT_ANSWERING = "RoutersNotAnswering"
ACTIVE = "active"


def destination(spec: Mapping[str, Any]) -> str:
    """What a routing resource's traffic goes to, in words."""
    if spec.get("connection"):
        return f"connector {spec['connection']!r}"
    return f"container {spec.get('containerId')!r}"


def reachable_condition(kind: str, spec: Mapping[str, Any], routers: Sequence[Mapping[str, Any]], *,
                        generation: int, previous: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """``routers``: the resource's ``status.routers`` entries (name, operStatus, lastError)."""
    answered = [r for r in routers if r.get("operStatus")]
    if not answered:
        return status.condition(REACHABLE, None, reason=NOT_ANSWERING,
                                message="no router reports the state of its links yet",
                                generation=generation, previous=previous)
    active = [str(r["name"]) for r in answered if r["operStatus"] == ACTIVE]
    if kind == "LinkRoute":
        if active:
            verdict, reason = True, ROUTE_CONNECTED
            message = (f"{destination(spec)} connected to {', '.join(active)}: reachable from every "
                       "router of the mesh")
        else:
            verdict, reason = False, NO_ROUTE_CONTAINER
            message = f"no router of the mesh is connected to {destination(spec)}"
    else:
        idle = [r for r in answered if r["operStatus"] != ACTIVE]
        verdict = not idle
        reason = AUTO_LINKS_ACTIVE if verdict else AUTO_LINK_INACTIVE
        message = f"active on {len(active)}/{len(answered)} routers"
        if idle:
            message += "; " + "; ".join(_why_not(r, spec) for r in idle)
    return status.condition(REACHABLE, verdict, reason=reason, message=message, generation=generation,
                            previous=previous)


def _why_not(router: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    state = str(router.get("operStatus"))
    error = router.get("lastError")
    if error:
        return f"{router['name']}: {state} ({error})"
    if state == "inactive":
        return f"{router['name']}: inactive (not connected to {destination(spec)})"
    return f"{router['name']}: {state}"


def summary(statuses: Sequence[Mapping[str, Any]]) -> str:
    """``1/2``: how many of these statuses have ``Reachable=True``."""
    reachable = [s for s in statuses if _is_reachable(s)]
    return f"{len(reachable)}/{len(statuses)}"


def _is_reachable(found: Mapping[str, Any]) -> bool:
    conditions: List[Mapping[str, Any]] = list(found.get("conditions") or [])
    return any(c.get("type") == REACHABLE and c.get("status") == "True" for c in conditions)
