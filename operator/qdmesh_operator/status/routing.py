"""Statuses of the routing resources (LinkRoute, AutoLink, VhostPolicy) of a mesh: whether
each is live on every router, from what the routers' management reported."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ..apply.management import RouterOutcome
from ..desired.state import MeshState
from ..model.errors import SpecError
from ..model.mesh import MeshSpec
from ..model.routing import PARSERS
from ..observe.cluster import ROUTING_PLURALS
from . import kstatus as status
from .reachable import ACTIVE, reachable_condition
from .report import Event, Report, generation_of, ref


def orphan_status(body: Mapping[str, Any]) -> Dict[str, Any]:
    """Status of a routing resource whose mesh does not exist."""
    meta = body["metadata"]
    mesh_name = (body.get("spec") or {}).get("meshRef")
    verdict = status.Verdict.stalled(
        status.MESH_NOT_FOUND, f"RouterMesh {mesh_name!r} not found in namespace {meta['namespace']!r}")
    return status.status_of(verdict, generation_of(body), body.get("status"), routers=[])


def orphans_report(bodies: Sequence[Tuple[str, Mapping[str, Any]]]) -> Report:
    report = Report(mesh_found=False)
    for kind, body in bodies:
        report.statuses[(ROUTING_PLURALS[kind], body["metadata"]["name"])] = orphan_status(body)
    return report


def routing_statuses(report: Report, state: MeshState, *, bodies: Sequence[Tuple[str, Mapping[str, Any]]],
                     invalid: Mapping[Tuple[str, str], SpecError],
                     outcomes: Mapping[str, RouterOutcome]) -> None:
    mesh = state.mesh
    problems = {(p.kind, p.name): p.error for p in state.problems}
    for kind, item in bodies:
        name = item["metadata"]["name"]
        generation = generation_of(item)
        key = (ROUTING_PLURALS[kind], name)
        error = invalid.get((kind, name)) or problems.get((kind, name))
        if error is not None:
            reason = status.UNKNOWN_REFERENCE if (kind, name) in problems else status.INVALID_SPEC
            report.statuses[key] = status.status_of(status.Verdict.stalled(reason, str(error)), generation,
                                                    item.get("status"), routers=[])
            if (item.get("status") or {}).get("observedGeneration") != generation:
                report.events.append(Event(ref(item), "Warning", reason, str(error)))
            continue
        entities = PARSERS[kind](name, item.get("spec") or {}).entities(mesh)
        report.statuses[key] = routing_status(kind, item, entities=entities, mesh=mesh, outcomes=outcomes,
                                              generation=generation)


def routing_status(kind: str, item: Mapping[str, Any], *, entities: Sequence[Any], mesh: MeshSpec,
                   outcomes: Mapping[str, RouterOutcome], generation: int) -> Dict[str, Any]:
    names = {e.name for e in entities}
    type_ = entities[0].type
    routers = []
    failures: List[str] = []
    applied = active = 0
    for rid in mesh.router_ids():
        outcome = outcomes.get(rid)
        entry: Dict[str, Any] = {"name": rid, "applied": False}
        if outcome is None or not outcome.reachable:
            entry["message"] = "router not reachable" if outcome is None else str(outcome.error)
            routers.append(entry)
            continue
        mine = [r for r in outcome.failures if r.op.name in names]
        rows = [row for row in outcome.live.get(type_, []) if row.get("name") in names]
        entry["applied"] = not mine and len(rows) == len(names)
        applied += entry["applied"]
        if mine:
            entry["message"] = "; ".join(str(r.error) for r in mine)
            failures.extend(str(r.error) for r in mine)
        if kind == "AutoLink" and rows:
            entry["operStatus"] = str(rows[0].get("operStatus") or "")
            if rows[0].get("lastError"):
                entry["lastError"] = str(rows[0]["lastError"])
            active += entry["operStatus"] == "active"
        elif rows and "operStatus" in rows[0]:
            # A link route's two entities (in and out) share their connection: either active is.
            states = [str(row.get("operStatus") or "") for row in rows]
            entry["operStatus"] = ACTIVE if ACTIVE in states else states[0]
            active += entry["operStatus"] == ACTIVE
        routers.append(entry)
    if failures:
        verdict = status.Verdict.stalled(status.APPLY_FAILED, f"a router refused it: {failures[0]}")
    elif applied == mesh.size:
        message = f"live on all {mesh.size} routers"
        if kind == "AutoLink":
            message += f"; link active on {active}"
        verdict = status.Verdict.ready(message)
    else:
        verdict = status.Verdict.progressing(status.ROUTER_UNREACHABLE,
                                             f"live on {applied}/{mesh.size} routers")
    extra: Dict[str, Any] = {"routers": routers}
    if kind in ("AutoLink", "LinkRoute"):
        extra["activeRouters"] = active
    found = status.status_of(verdict, generation, item.get("status"), **extra)
    if kind in ("AutoLink", "LinkRoute"):
        found["conditions"].append(reachable_condition(
            kind, item.get("spec") or {}, routers, generation=generation,
            previous=(item.get("status") or {}).get("conditions") or []))
    return found
