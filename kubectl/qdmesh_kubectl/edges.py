"""`kubectl qdstat MESH --edge-routers`: a mesh's edge routers, from its status (what the operator
read from each edge router's management: its router id and the interior router it is
connected to) and its pods (phase, readiness), with no port-forward."""

from __future__ import annotations

from typing import Any, Dict, List

from qdrouter.tools.table import Table

from .cluster import RouterPod

HEADS = ["group", "pod", "state", "node", "router-id", "interior", "connected", "message"]


def edges_table(mesh: Dict[str, Any], pods: List[RouterPod]) -> Table:
    """One row per edge router pod; pods the status does not mention yet still get a row."""
    reported: Dict[str, Dict[str, Any]] = {}
    for group in (mesh.get("status") or {}).get("edgeGroups") or []:
        for router in group.get("routers") or []:
            reported[str(router.get("name"))] = router
    table = Table("Edge Routers", list(HEADS))
    for pod in pods:
        row = reported.get(pod.name, {})
        table.rows.append([pod.edge_group or "", pod.name, pod.state(), row.get("node", ""),
                           row.get("routerId", ""), row.get("interior", "") or "-",
                           "yes" if row.get("ready") else "no", row.get("message", "")])
    return table


def edges_summary(mesh: Dict[str, Any]) -> str:
    """The status line: how many edge routers are connected out of how many the groups want."""
    status = mesh.get("status") or {}
    groups = status.get("edgeGroups") or []
    parts = [f"{g.get('name')}: {g.get('readyEdges', 0)}/{g.get('edges', 0)} ({g.get('kind')})"
             for g in groups]
    line = f"edge routers connected: {status.get('edgesReady', '0/0')}"
    return line + (f" ({', '.join(parts)})" if parts else "")
