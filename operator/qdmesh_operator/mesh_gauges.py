"""Prometheus gauges of what each RouterMesh's status says (the signals the chart's alert rules
read): routers ready and lost, convergence, each router's readiness, whether traffic can reach
each LinkRoute's and AutoLink's destination, and when each certificate expires.

Taken from the statuses a reconciliation computed, so they are as fresh as the last drift
check (``--drift-interval``); a mesh's series go with the mesh.  One entry per mesh, replaced
whole each time: the memory is a function of what exists."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any, Dict, List, Mapping, Tuple

from . import contract
from .canary_histograms import PairHistograms

Key = Tuple[str, str]
Statuses = Mapping[Tuple[str, str], Mapping[str, Any]]
#: The operator's own routing plurals and the kind each gauge's label names.
ROUTE_KINDS = {"linkroutes": "LinkRoute", "autolinks": "AutoLink"}

FAMILIES = (
    ("qdmesh_mesh_ready", "1 when the RouterMesh's Ready condition is True."),
    ("qdmesh_mesh_converged", "1 when every router of the mesh reaches every other (MeshConverged)."),
    ("qdmesh_mesh_routers", "Routers the mesh's StatefulSet runs."),
    ("qdmesh_mesh_ready_routers", "Routers of the mesh that are ready (never counting a lost one)."),
    ("qdmesh_mesh_lost_routers", "Routers of the mesh lost since they ran (their node or pod gone)."),
    ("qdmesh_router_ready", "1 when the router is ready: its pod runs and its configuration is live."),
    ("qdmesh_router_management_answers", "1 when the operator reached the router's AMQP management."),
    ("qdmesh_route_reachable", "1 when traffic can reach the LinkRoute's or AutoLink's destination "
                               "(its Reachable condition), 0 when not."),
    ("qdmesh_canary_pair_reachable", "1 when the canary's last probe from the source router reached the "
                                     "destination router through the mesh and back, 0 when it failed."),
    ("qdmesh_canary_round_trip_seconds", "The canary's last round trip from the source router to the "
                                         "destination router's management and back, through the mesh."),
    ("qdmesh_certificate_expiry_timestamp_seconds",
     "When the certificate in the Secret expires (Unix time)."),
)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _condition(found: Mapping[str, Any], type_: str) -> str | None:
    return next((str(c.get("status")) for c in found.get("conditions") or [] if c.get("type") == type_), None)


def samples(namespace: str, mesh: str, statuses: Statuses,
            canary: Mapping[Tuple[str, str], Any] | None = None) -> List[Tuple[str, Dict[str, str], float]]:
    """(family, labels, value) of one mesh, from its reconciliation's statuses and the canary's
    last result of each pair (canary/probe.py PairResult)."""
    base = {"namespace": namespace, "mesh": mesh}
    found: List[Tuple[str, Dict[str, str], float]] = []
    status = statuses.get((contract.MESH_PLURAL, mesh))
    if status is not None:
        found += [("qdmesh_mesh_ready", base, float(_condition(status, "Ready") == "True")),
                  ("qdmesh_mesh_converged", base, float(_condition(status, "MeshConverged") == "True")),
                  ("qdmesh_mesh_routers", base, float(status.get("routers") or 0)),
                  ("qdmesh_mesh_ready_routers", base, float(status.get("readyRouters") or 0)),
                  ("qdmesh_mesh_lost_routers", base, float(len(status.get("lostRouters") or [])))]
        for router in status.get("routerStatus") or []:
            labels = {**base, "router": str(router.get("name"))}
            found += [("qdmesh_router_ready", labels, float(bool(router.get("ready")))),
                      # Only a router whose management answered reports its peers.
                      ("qdmesh_router_management_answers", labels, float("peers" in router))]
        for cert in status.get("certificates") or []:
            when = dt.datetime.fromisoformat(str(cert["notAfter"]).replace("Z", "+00:00"))
            found.append(("qdmesh_certificate_expiry_timestamp_seconds",
                          {**base, "secret": str(cert["secret"])}, when.timestamp()))
    for (source, destination), result in sorted((canary or {}).items()):
        labels = {**base, "source": source, "destination": destination}
        found.append(("qdmesh_canary_pair_reachable", labels, float(result.seconds is not None)))
        if result.seconds is not None:
            found.append(("qdmesh_canary_round_trip_seconds", labels, float(result.seconds)))
    for (plural, name), route in sorted(statuses.items()):
        reachable = _condition(route, "Reachable") if plural in ROUTE_KINDS else None
        if reachable in ("True", "False"):
            found.append(("qdmesh_route_reachable", {**base, "kind": ROUTE_KINDS[plural], "name": name},
                          float(reachable == "True")))
    return found


class MeshGauges:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._meshes: Dict[Key, List[Tuple[str, Dict[str, str], float]]] = {}
        self.histograms = PairHistograms()

    def observe(self, namespace: str, mesh: str, statuses: Statuses,
                canary: Mapping[Tuple[str, str], Any] | None = None) -> None:
        """A reconciliation's statuses and canary results (one that has no status of the mesh,
        served by another reconciliation, changes nothing)."""
        if (contract.MESH_PLURAL, mesh) not in statuses:
            return
        found = samples(namespace, mesh, statuses, canary)
        with self._lock:
            self._meshes[(namespace, mesh)] = found
        self.histograms.observe(namespace, mesh, canary or {})

    def forget(self, namespace: str, mesh: str) -> None:
        with self._lock:
            self._meshes.pop((namespace, mesh), None)
        self.histograms.forget(namespace, mesh)

    def meshes(self) -> int:
        with self._lock:
            return len(self._meshes)

    def render(self) -> str:
        with self._lock:
            every = [sample for key in sorted(self._meshes) for sample in self._meshes[key]]
        lines: List[str] = []
        for family, help_text in FAMILIES:
            lines += [f"# HELP {family} {help_text}", f"# TYPE {family} gauge"]
            for name, labels, value in every:
                if name == family:
                    text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
                    # Exact: a timestamp in %g would lose its seconds.
                    number = str(int(value)) if value.is_integer() else repr(value)
                    lines.append(f"{family}{{{text}}} {number}")
        lines += self.histograms.render()
        return "\n".join(lines) + "\n"


MESH_GAUGES = MeshGauges()
