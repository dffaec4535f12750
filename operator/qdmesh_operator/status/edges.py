"""The edge groups' part of a RouterMesh's status: per group, how many edge routers should run,
how many are connected to an interior router with their configuration live, and each router
with the interior router it is connected to.  Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List

from ..apply.mesh import Applied
from ..desired.state import MeshState
from ..observe.cluster import Observed


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


def edge_status(state: MeshState, observed: Observed, applied: Applied) -> EdgeStatus:
    found = EdgeStatus()
    for group in state.mesh.edge_groups:
        live = observed.edge_workloads.get(group.name) or {}
        if group.per_node:
            wanted = int((live.get("status") or {}).get("desiredNumberScheduled") or 0)
        else:
            wanted = int(group.size or 0)
        routers: List[Dict[str, Any]] = []
        ready = 0
        for router in applied.edge_routers:
            if router.group != group.name:
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
            ready += entry["ready"]
            routers.append(entry)
        found.groups.append({"name": group.name, "kind": "DaemonSet" if group.per_node else "Deployment",
                             "edges": wanted, "readyEdges": ready, "routers": routers})
        found.wanted += wanted
        found.ready += ready
    return found
