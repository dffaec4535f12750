"""The report stage of a reconciliation, in one call: every status it writes (the RouterMesh's,
with its edge groups, and each routing resource's) and every Event it posts, in the order the
stages produced them (certificates, apply, rolling restart, routing resources, management)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .. import contract
from ..apply.mesh import Applied
from ..canary.summary import CanarySummary
from ..desired.state import MeshState
from ..kube.api import KubeRefused
from ..model.inputs import ParsedMesh
from ..observe.cluster import Observed
from ..operations import MANUAL_ROLL_ANNOTATION
from ..tls.resolve import Certificates
from . import certificates as certificate_status
from . import drift, reachable
from . import mesh as mesh_status
from .edges import edge_status
from .lost import control_plane_away, lost_events, lost_routers, recovering
from .paused import resumed_event
from .pods import pod_events
from .report import Event, Report, generation_of, ref
from .rolling import pending, rolling_event
from .routing import routing_statuses


def reconciled_report(body: Mapping[str, Any], *, parsed: ParsedMesh, observed: Observed, state: MeshState,
                      certificates: Certificates, applied: Applied, why: str,
                      last_in_sync: Mapping[str, int], canary: CanarySummary | None = None) -> Report:
    """``last_in_sync``: the previous reconciliation's ``Report.in_sync``; ``canary``: what the
    probes between the routers found."""
    report = Report()
    resumed = resumed_event(body)
    if resumed is not None:
        report.events.append(resumed)
    report.events.extend(_events(body, certificates.events, applied.events))
    if parsed.manual_roll and observed.stateful_set is not None:  # applied, the annotation gone: once
        report.events.append(Event(ref(body), "Normal", "ManualRollingUpdate",
                                   f"{MANUAL_ROLL_ANNOTATION} asked for a rolling restart: every router "
                                   "restarts, one at a time, each once the mesh has reconverged"))
    rolling = rolling_event(body, applied)
    if rolling is not None:
        report.events.append(rolling)
    every_router = {**applied.outcomes, **applied.edge_outcomes}
    # A drift check repairs drift on every router, edges included; any other trigger repairs
    # it on the routers nothing was asked of since they were last in sync.
    repairs = frozenset(every_router) if why == "drift" else drift.unchanged_since(last_in_sync, state)
    report.in_sync = drift.in_sync(state, applied.outcomes)
    mesh_status.count(report, every_router, repairs)
    lost = lost_routers(parsed.mesh, body, observed=observed, outcomes=applied.outcomes,
                        rolling="" if pending(applied) else applied.rolling)
    report.events.extend(lost_events(body, lost, observed, parsed.mesh.size))
    nodes = {name: pod.node for name, pod in observed.pods.items() if pod.node}
    # A router whose management answers is running, whatever its pod says (a router reached
    # outside the cluster): the pod is not why it does not work, and no Warning says so.
    answers = {rid for rid, outcome in applied.outcomes.items() if outcome.reachable}
    problems = {name: pod.problem for name, pod in observed.pods.items()
                if pod.problem is not None and not pod.ready and name in parsed.mesh.router_ids()
                and name not in answers}
    edges = edge_status(state, observed, applied)
    report.events.extend(pod_events(body, {**problems, **edges.problems}))
    away = control_plane_away(body, observed)
    answering = [rid for rid in recovering(observed) if away and rid in answers]
    report.statuses[(contract.MESH_PLURAL, parsed.mesh.name)] = mesh_status.mesh_status(
        body, state, applied=applied, edges=edges, lost=lost, nodes=nodes,
        problems=problems, answering=answering, canary=canary)
    routing_statuses(report, state, bodies=observed.routing, invalid=parsed.invalid,
                     outcomes=applied.outcomes)
    _summarise_routes(report.statuses, parsed.mesh.name)
    mesh_body = report.statuses[(contract.MESH_PLURAL, parsed.mesh.name)]
    if applied.consumed is not None:
        mesh_body["addressesWithConsumers"] = applied.consumed.count
    if certificates.expiries:
        mesh_body["certificates"] = certificate_status.expiry_list(certificates.expiries)
    if certificates.profiles or certificates.edge_profiles:
        reloads = {**applied.tls, **applied.edge_tls}
        previous = list((body.get("status") or {}).get("conditions") or [])
        mesh_body["conditions"].append(certificate_status.condition(reloads, generation_of(body), previous))
        report.events.extend(_events(body, certificate_status.events(reloads, previous)))
    mesh_status.management_events(report, body, every_router, repairs)
    return report


def _summarise_routes(statuses: Dict[Tuple[str, str], Dict[str, Any]], mesh: str) -> None:
    """The RouterMesh's status says how many of its link routes and auto-links traffic can
    reach (their ``Reachable`` condition), beside how many routers are ready."""
    mesh_status_ = statuses.get((contract.MESH_PLURAL, mesh))
    if mesh_status_ is None:
        return
    for plural, field in (("linkroutes", "reachableLinkRoutes"), ("autolinks", "reachableAutoLinks")):
        found = [s for (p, _), s in statuses.items() if p == plural]
        if found:
            mesh_status_[field] = reachable.summary(found)


def refused_report(body: Mapping[str, Any], refused: KubeRefused,
                   certificates: Certificates | None = None) -> Report:
    """The API server refused a write; the certificate stage's Events still go out (a Secret
    it made is there)."""
    report = mesh_status.refused_report(body, refused)
    if certificates is not None:
        report.events[:0] = _events(body, certificates.events)
    return report


def _events(body: Mapping[str, Any], *groups: Sequence[Tuple[str, str, str]]) -> List[Event]:
    return [Event(ref(body), *event) for group in groups for event in group]
