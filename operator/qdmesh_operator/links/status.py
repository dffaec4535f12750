"""What a MeshLink's status says.  Conditions ``Redeemed`` (reasons Redeemed, InvalidToken,
Refused, Unreachable), ``Connected`` (each link connector is up and the remote mesh's routers
are in the routers' ``router.node`` tables) and ``Ready`` (both); ``remoteMesh``,
``endpoints``, ``remoteRouters`` and ``connections``.  Pure."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from .. import contract
from ..apply.management import RouterOutcome
from ..status import kstatus
from .credentials import Credentials
from .entities import connector_name, profile_name
from .spec import LinkSpec

REDEEMED = "Redeemed"
CONNECTED = "Connected"
READY = kstatus.READY

NOT_REDEEMED = "NotRedeemed"
MESH_NOT_FOUND = "MeshNotFound"
CONNECTING = "Connecting"
ROUTERS_NOT_ANSWERING = "RoutersNotAnswering"
INVALID_CREDENTIALS = "InvalidCredentials"


def _generation(body: Mapping[str, Any]) -> int:
    return int((body.get("metadata") or {}).get("generation") or 0)


def _previous(body: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return list((body.get("status") or {}).get("conditions") or [])


def not_redeemed_status(body: Mapping[str, Any], reason: str, message: str) -> Dict[str, Any]:
    """A link whose token is not (yet) redeemed: why, in words naming the field or the server's
    message."""
    generation, previous = _generation(body), _previous(body)
    return {"observedGeneration": generation, "conditions": [
        kstatus.condition(REDEEMED, False, reason=reason, message=message, generation=generation,
                          previous=previous),
        kstatus.condition(CONNECTED, False, reason=NOT_REDEEMED, message="the token is not redeemed",
                          generation=generation, previous=previous),
        kstatus.condition(READY, False, reason=reason, message=message, generation=generation,
                          previous=previous)]}


def broken_status(body: Mapping[str, Any], problem: str) -> Dict[str, Any]:
    return not_redeemed_status(body, INVALID_CREDENTIALS, f"the credentials Secret: {problem}")


def _connection(rid: str, outcome: RouterOutcome | None, name: str, profile: str) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"router": rid}
    if outcome is None or not outcome.reachable:
        entry["operStatus"] = "unknown"
        return entry
    refused = [str(r.error) for r in outcome.failures if r.op.name in (name, profile)]
    if refused:
        entry["message"] = "; ".join(refused)[:1000]
    row = next((r for r in outcome.live.get("connector", []) if r.get("name") == name), None)
    if row is None:
        entry["operStatus"] = "missing"
        return entry
    entry["endpoint"] = f"{row.get('host')}:{row.get('port')}"
    state = str(row.get("connectionStatus") or "down")
    # qdrouterd says SUCCESS of a connector whose connection is open; qdmesh says Operational.
    entry["operStatus"] = "up" if state.upper() in ("SUCCESS", "OPERATIONAL") else state.lower()
    return entry


def linked_status(body: Mapping[str, Any], spec: LinkSpec, found: Credentials, mesh_size: int,
                  outcomes: Mapping[str, RouterOutcome]) -> Dict[str, Any]:
    """A redeemed link, from what the routers holding its connectors report."""
    generation, previous = _generation(body), _previous(body)
    holders = [contract.router_id(spec.mesh_name, i) for i in range(spec.routers(mesh_size))]
    name = connector_name(spec.name)
    connections = [_connection(rid, outcomes.get(rid), name, profile_name(spec.name)) for rid in holders]
    remote: set = set()
    seen_by: List[str] = []
    for rid in holders:
        outcome = outcomes.get(rid)
        if outcome is None or not outcome.reachable:
            continue
        theirs = {n for n in outcome.nodes if contract.is_router_of(found.remote_mesh, n)}
        remote |= theirs
        if theirs:
            seen_by.append(rid)
    unknown = [c["router"] for c in connections if c["operStatus"] == "unknown"]
    down = [f"{c['router']} ({c['operStatus']})" for c in connections
            if c["operStatus"] not in ("up", "unknown")]
    if not holders:
        verdict, reason, message = False, MESH_NOT_FOUND, f"RouterMesh {spec.mesh_name!r} has no routers"
    elif down:
        verdict, reason, message = False, CONNECTING, f"link connectors not up on {', '.join(down)}"
        refused = [f"{c['router']}: {c['message']}" for c in connections if c.get("message")]
        if refused:  # most often: the routers wait for the links Secret's files to be mounted
            message += "; " + "; ".join(refused)
    elif unknown:
        verdict, reason, message = None, ROUTERS_NOT_ANSWERING, f"routers {', '.join(unknown)} do not answer"
    elif len(seen_by) < len(holders):
        verdict, reason = False, CONNECTING
        message = (f"routers {', '.join(r for r in holders if r not in seen_by)} do not see the routers of "
                   f"{found.remote_mesh!r} yet")
    else:
        verdict, reason = True, CONNECTED
        message = (f"{len(holders)} connection(s) to {found.remote_mesh!r}, "
                   f"{len(remote)} remote router(s) reached")
    conditions = [
        kstatus.condition(REDEEMED, True, reason=REDEEMED, message=f"redeemed with {found.remote_mesh!r} "
                          f"({found.remote_namespace})", generation=generation, previous=previous),
        kstatus.condition(CONNECTED, verdict, reason=reason, message=message, generation=generation,
                          previous=previous),
        kstatus.condition(READY, verdict, reason=reason, message=message, generation=generation,
                          previous=previous)]
    return {"observedGeneration": generation, "conditions": conditions,
            "remoteMesh": {"name": found.remote_mesh, "namespace": found.remote_namespace},
            "endpoints": [f"{e.host}:{e.port}" for e in found.endpoints],
            "remoteRouters": sorted(remote), "connections": connections}


def mesh_link_statuses(links: Any, mesh_size: int, outcomes: Mapping[str, RouterOutcome]
                       ) -> Dict[str, Dict[str, Any]]:
    """Status by link name, for the links the mesh's reconciliation owns (the redeemed ones)."""
    out: Dict[str, Dict[str, Any]] = {}
    for spec, found in links.ready:
        out[spec.name] = linked_status(links.bodies[spec.name], spec, found, mesh_size, outcomes)
    for name, problem in links.broken.items():
        out[name] = broken_status(links.bodies[name], problem)
    return out


__all__: Sequence[str] = ["linked_status", "mesh_link_statuses", "not_redeemed_status"]
