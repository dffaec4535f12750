"""The report stage for a RouterMesh: its status (conditions, each router as its management
reports it) and its Events, from what the earlier stages found.  Pure."""

from __future__ import annotations

import json
from typing import AbstractSet, Any, Dict, Mapping, Sequence

from kubernetes.client.rest import ApiException

from .. import contract
from ..apply.converged import mesh_converged
from ..apply.management import RouterOutcome
from ..apply.mesh import Applied
from ..apply.plan import CREATE
from ..canary.summary import CanarySummary
from ..desired.state import MeshState
from ..kube.api import KubeRefused
from ..links.entities import is_link_entity
from ..model.restart import restart_sections
from ..pod_problems import PodProblem
from . import kstatus as status
from .edges import EdgeStatus
from .lost import LostRouter, describe
from .pods import pods_verdict
from .report import Event, Report, generation_of, ref
from .rolling import pending, pending_condition, rolling_status


def stalled_report(body: Mapping[str, Any], message: str, event: str | None) -> Report:
    """A RouterMesh the operator cannot go on with until its spec changes; ``event`` is the
    Warning to post (None: none)."""
    report = Report()
    report.statuses[(contract.MESH_PLURAL, body["metadata"]["name"])] = status.status_of(
        status.Verdict.stalled(status.INVALID_SPEC, message), generation_of(body), body.get("status"))
    if event is not None and is_news(body, status.INVALID_SPEC, message):
        report.events.append(Event(ref(body), "Warning", status.INVALID_SPEC, event))
    return report


def is_news(body: Mapping[str, Any], reason: str, message: str) -> bool:
    """Whether the last status's Ready condition said something else: a verdict that stands
    (a bad spec, a refused write) is announced once, not at every drift check."""
    previous = (body.get("status") or {}).get("conditions") or []
    ready = next((c for c in previous if c.get("type") == status.READY), None)
    return ready is None or (ready.get("reason"), ready.get("message")) != (reason, message[:32000])


def refused_report(body: Mapping[str, Any], refused: KubeRefused) -> Report:
    """The API server refused a write: stalled when the request itself is wrong (it would be
    refused again), progressing when it may pass next time."""
    e = refused.error
    reason = _api_reason(e)
    if refused.kind == "Certificate" and e.status == 404:
        reason = ("spec.interRouter.tls.mode CertManager needs cert-manager (cert-manager.io/v1 "
                  "Certificate), which is not installed")
    if refused.kind == "Route" and e.status == 404:
        reason = "spec.linkAccess.type Route needs OpenShift (route.openshift.io/v1 Route), not found here"
    verdict = (status.Verdict.stalled(status.APPLY_FAILED, f"Kubernetes refused {refused.kind}: {reason}")
               if e.status in (400, 403, 404, 422) else
               status.Verdict.progressing(status.PROGRESSING, f"Kubernetes API: {reason}"))
    report = Report()
    report.statuses[(contract.MESH_PLURAL, body["metadata"]["name"])] = status.status_of(
        verdict, generation_of(body), body.get("status"))
    if verdict.state != "stalled" or is_news(body, verdict.reason, verdict.message):
        report.events.append(Event(ref(body), "Warning", verdict.reason, verdict.message))
    return report


def _api_reason(e: ApiException) -> str:
    try:
        return str(json.loads(e.body or "").get("message"))
    except Exception:
        return f"{e.status} {e.reason}"


def router_entry(rid: str, outcome: RouterOutcome | None, *, node: str = "",
                 lost: LostRouter | None = None, problem: PodProblem | None = None) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"name": rid, "ready": bool(outcome and outcome.in_sync and lost is None)}
    if node:
        entry["node"] = node
    if problem is not None and (outcome is None or not outcome.reachable):
        entry["message"] = f"pod not ready: {problem.describe()}"[:1000]
    elif lost is not None:
        # What management answered last is no news about a router whose node or pod is gone.
        entry["message"] = f"lost: {lost.message}"
    elif outcome is None:
        entry["message"] = "pod not ready"
    elif not outcome.reachable:
        entry["message"] = str(outcome.error)
    else:
        # Its own mesh's routers only: a linked mesh's routers are in router.node too.
        entry.update(peers=sum(1 for n in outcome.nodes if not contract.is_foreign(rid.rsplit("-", 1)[0], n)),
                     connections=int(outcome.router.get("connectionCount") or 0),
                     addresses=int(outcome.router.get("addrCount") or 0))
        if outcome.failures:
            entry["message"] = "; ".join(str(r.error) for r in outcome.failures)[:1000]
    return entry


def mesh_status(body: Mapping[str, Any], state: MeshState, *, applied: Applied,
                edges: EdgeStatus | None = None, lost: Sequence[LostRouter] = (),
                nodes: Mapping[str, str] | None = None,
                problems: Mapping[str, PodProblem] | None = None,
                answering: Sequence[str] = (), canary: CanarySummary | None = None) -> Dict[str, Any]:
    """``lost``: routers lost since they ran (status/lost.py); ``nodes``: router -> its node;
    ``problems``: what keeps each router whose pod is not ready from running (pods.py);
    ``answering``: routers that answer management although every node of the mesh is not ready;
    ``canary``: what the last probes between its routers found (canary/)."""
    problems = problems or {}
    mesh, outcomes, sts = state.mesh, applied.outcomes, applied.stateful_set_status
    generation = generation_of(body)
    previous = body.get("status") or {}
    lost_by_name = {r.name: r for r in lost}
    # The StatefulSet counts a pod ready until the node lifecycle controller marks it otherwise
    # (~40 s after its node stopped): a lost router is never counted.
    ready_replicas = max(0, min(int(sts.get("readyReplicas") or 0), mesh.size - len(lost)))
    # Routing resources and MeshLinks report their own entities' failures (a link's sslProfile
    # waits for its files to be mounted).
    routing_names = {e.name for rid in state.entities for e in state.entities[rid]
                     if e.type in ("linkRoute", "autoLink", "vhost") or is_link_entity(e.name)}
    mesh_failures = [r.error for o in outcomes.values() for r in o.failures
                     if r.op.name not in routing_names]
    unreachable = [o.error for o in outcomes.values() if not o.reachable]
    routers = [router_entry(rid, outcomes.get(rid), node=(nodes or {}).get(rid, ""),
                            lost=lost_by_name.get(rid), problem=problems.get(rid))
               for rid in mesh.router_ids()]
    edges = edges or EdgeStatus()
    mesh_failures += edges.failures
    if mesh_failures:
        verdict = status.Verdict.stalled(status.APPLY_FAILED, "; ".join(str(m) for m in mesh_failures[:3]))
    elif any(p.stalled for p in problems.values()):
        verdict = pods_verdict(problems)
    elif applied.rolling and not pending(applied):
        verdict = status.Verdict.progressing(status.ROLLING_RESTART, applied.rolling)
    elif problems:
        verdict = pods_verdict(problems)
    elif answering:
        # Kept while any of those nodes is not ready (status/lost.py: control_plane_away).
        verdict = status.Verdict.progressing(
            status.NODES_NOT_READY, f"the mesh's nodes turned not ready together, but {len(answering)} of "
            f"{mesh.size} routers on them answer management ({', '.join(answering)}): not counted as "
            "lost; Kubernetes' control plane may have been away")
    elif lost:
        verdict = status.Verdict.progressing(status.ROUTERS_LOST, describe(lost, mesh.size))
    elif ready_replicas < mesh.size:
        verdict = status.Verdict.progressing(status.ROUTERS_NOT_READY,
                                             f"{ready_replicas}/{mesh.size} routers ready")
    elif unreachable or len(outcomes) < mesh.size:
        verdict = status.Verdict.progressing(status.ROUTER_UNREACHABLE,
                                             "; ".join(str(u) for u in unreachable[:3])
                                             or "routers not reachable yet")
    elif edges.ready < edges.wanted and edges.problems:
        verdict = pods_verdict(edges.problems)
    elif edges.ready < edges.wanted:
        verdict = status.Verdict.progressing(status.EDGES_NOT_READY,
                                             f"{edges.ready}/{edges.wanted} edge routers connected to "
                                             "an interior router with their configuration live")
    elif mesh.edge_groups:
        verdict = status.Verdict.ready(f"{mesh.size} routers and {edges.wanted} edge routers ready, "
                                       "configuration live on every router")
    else:
        verdict = status.Verdict.ready(f"{mesh.size} routers ready, configuration live on every router")
    converged = mesh_converged(mesh, outcomes)
    new = status.status_of(verdict, generation, previous, routers=int(sts.get("replicas") or 0),
                           readyRouters=ready_replicas,
                           selector=f"qdmesh.io/mesh={mesh.name}", image=mesh.image, routerImage=mesh.image,
                           configHash=mesh.restart_hash(), routerStatus=routers,
                           lostRouters=[r.entry() for r in lost], restartSections=restart_sections(mesh),
                           rollingRestart=rolling_status(previous, applied))
    if mesh.edge_groups:
        new.update(edges=edges.wanted, readyEdges=edges.ready, edgesReady=f"{edges.ready}/{edges.wanted}",
                   edgeGroups=edges.groups)
    new["conditions"].append(status.condition(
        status.MESH_CONVERGED, converged, reason="AllRoutersSeeEachOther" if converged else "NotConverged",
        message=f"every router reaches the other {mesh.size - 1}, each over its own links" if converged
        else "not every router reaches every other router over its own links yet", generation=generation,
        previous=previous.get("conditions") or []))
    waiting = pending_condition(previous, applied, mesh.maintenance_windows, generation)
    if waiting is not None:
        new["conditions"].append(waiting)
    canary = canary or CanarySummary()
    if canary.probed:
        new["canary"] = canary.status()
    if lost:
        degraded, reason, message = True, status.ROUTERS_LOST, describe(lost, mesh.size)
    elif canary.failing:
        degraded, reason, message = True, status.CANARY_FAILED, canary.degraded_message()
    else:
        degraded, reason, message = False, "NoRouterLost", "no router lost since it ran"
    new["conditions"].append(status.condition(
        status.DEGRADED, degraded, reason=reason, message=message, generation=generation,
        previous=previous.get("conditions") or []))
    return new


def count(report: Report, outcomes: Mapping[str, RouterOutcome], repairs: AbstractSet[str]) -> None:
    """``repairs``: the routers whose changes put back drift (status/drift.py)."""
    for rid, outcome in outcomes.items():
        report.operations += len(outcome.results)
        report.failures += len(outcome.failures)
        if rid in repairs:
            report.repaired += len([r for r in outcome.results if r.ok])


def management_events(report: Report, body: Mapping[str, Any], outcomes: Mapping[str, RouterOutcome],
                      repairs: AbstractSet[str]) -> None:
    """One Event for the drift put back and one for the live changes asked for, each if any."""
    ok = [(rid, r) for rid, o in outcomes.items() for r in o.results if r.ok]
    repaired = [(rid, r) for rid, r in ok if rid in repairs]
    done = [(rid, r) for rid, r in ok if rid not in repairs]
    if repaired:
        what = sorted({r.op.describe() for _, r in repaired})
        report.events.append(Event(ref(body), "Warning", "DriftRepaired",
                                   f"{len(repaired)} operations on {len({rid for rid, _ in repaired})} "
                                   "routers put back what had changed by hand: " + "; ".join(what[:5])))
    if done:
        created = len([1 for _, r in done if r.op.action == CREATE])
        report.events.append(Event(ref(body), "Normal", "Applied",
                                   f"{len(done)} live changes ({created} created) on "
                                   f"{len({rid for rid, _ in done})} routers, no restart"))
    for rid, outcome in outcomes.items():
        for failure in outcome.failures[:3]:
            report.events.append(Event(ref(body), "Warning", status.APPLY_FAILED, f"{rid}: {failure.error}"))
