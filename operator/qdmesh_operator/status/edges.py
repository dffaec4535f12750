"""The edge groups' part of a RouterMesh's status: per group, how many edge routers should run,
how many are connected to an interior router with their configuration live, and each router
with the interior router it is connected to.  Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Set

from ..apply.mesh import Applied
from ..desired.state import MeshState
from ..observe.cluster import Observed
from ..pod_problems import PodProblem


@dataclass
class EdgeStatus:
    #: status.edgeGroups: one entry per group of the spec.
    groups: List[Dict[str, Any]] = field(default_factory=list)
    #: Edge routers the groups should run (a per-node group: as many as its DaemonSet schedules).
    wanted: int = 0
    #: Edge routers connected to an interior router, with their configuration live.
    ready: int = 0
    #: What the routers refused, for the mesh's Stalled condition.
    failures: List[str] = field(default_factory=list)
    #: What keeps each edge router whose pod is not ready from running, by pod name.
    problems: Dict[str, PodProblem] = field(default_factory=dict)


def edge_status(state: MeshState, observed: Observed, applied: Applied) -> EdgeStatus:
    found = EdgeStatus()
    for group in state.mesh.edge_groups:
        live = observed.edge_workloads.get(group.name) or {}
        if group.per_node:
            wanted = int((live.get("status") or {}).get("desiredNumberScheduled") or 0)
        else:
            wanted = int(group.size or 0)
        routers = _managed(group.name, observed, applied, found)
        ready = sum(1 for entry in routers if entry["ready"])
        routers += _kept_from_running(group.name, observed, {entry["name"] for entry in routers}, found)
        found.groups.append({"name": group.name, "kind": "DaemonSet" if group.per_node else "Deployment",
                             "edges": wanted, "readyEdges": ready, "routers": routers})
        found.wanted += wanted
        found.ready += ready
    return found


def _managed(group: str, observed: Observed, applied: Applied, found: EdgeStatus) -> List[Dict[str, Any]]:
    """The group's ready edge routers, each with what management said (refusals into ``found``)."""
    routers: List[Dict[str, Any]] = []
    for router in applied.edge_routers:
        if router.group != group:
            continue
        outcome = applied.edge_outcomes.get(router.name)
        pod = observed.edge_pods.get(router.name)
        entry: Dict[str, Any] = {"name": router.name, "ready": False}
        if pod is not None and pod.node:
            entry["node"] = pod.node
        if outcome is None:
            entry["message"] = "not managed this time"
        elif not outcome.reachable:
            entry["message"] = str(outcome.error)
        else:
            entry["routerId"] = str(outcome.router.get("id") or "")
            entry["interior"] = outcome.uplink
            entry["ready"] = bool(outcome.in_sync and outcome.uplink)
            problems = [str(r.error) for r in outcome.failures]
            found.failures.extend(f"{router.name}: {p}" for p in problems)
            if problems:
                entry["message"] = "; ".join(problems)[:1000]
            elif not outcome.uplink:
                entry["message"] = "not connected to an interior router yet"
        routers.append(entry)
    return routers


def _kept_from_running(group: str, observed: Observed, managed: Set[str],
                       found: EdgeStatus) -> List[Dict[str, Any]]:
    """The group's pods that are not ready and say why (an image that cannot be pulled, no
    node to run on, a crash loop): as the interior routers' entries say it (problems into
    ``found``, for the mesh's conditions and Warning Events)."""
    entries: List[Dict[str, Any]] = []
    for pod in sorted(observed.edge_pods.values(), key=lambda p: p.name):
        if pod.group != group or pod.ready or pod.problem is None or pod.name in managed:
            continue
        found.problems[pod.name] = pod.problem
        entry: Dict[str, Any] = {"name": pod.name, "ready": False,
                                 "message": f"pod not ready: {pod.problem.describe()}"[:1000]}
        if pod.node:
            entry["node"] = pod.node
        entries.append(entry)
    return entries
