"""Routers lost after they ran: with their node (NotReady, unreachable), with their pod (not
Ready, gone) or with their management (the pod says Ready, the router does not answer).  Pure:
decided from what the observe and apply stages found and from the status written last time,
which is how a router "ran before" is known without state in the operator (a restarted
operator carries on where the last status left off, and posts no Event twice).

A router that never ran (a new mesh, a new router of a scale-up) is not lost, only not ready
yet; during a rolling restart the router being replaced is not lost either.  A router whose
node is not ready is lost whatever it did before (nothing on that node runs), except when
every node of the mesh turned not ready together and its management answers: then the nodes'
status is what is wrong (Kubernetes' control plane itself was away), not the routers.  Since
the node lifecycle controller marks nodes one after another, a node that turned not ready a
moment ago (``Observed.settling``) is judged only once the others had time to follow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Set

from ..apply.management import RouterOutcome
from ..model.mesh import MeshSpec
from ..observe.cluster import Observed
from .kstatus import NODES_NOT_READY
from .report import Event, ref

NODE_NOT_READY = "NodeNotReady"
POD_MISSING = "PodMissing"
POD_NOT_READY = "PodNotReady"
MANAGEMENT_UNREACHABLE = "ManagementUnreachable"


@dataclass
class LostRouter:
    name: str
    node: str
    reason: str
    message: str

    def entry(self) -> Dict[str, Any]:
        """As status.lostRouters lists it."""
        return {"name": self.name, "node": self.node, "reason": self.reason, "message": self.message[:1000]}


def previous_routers(body: Mapping[str, Any]) -> tuple[Set[str], Set[str]]:
    """(routers the last status said were ready, routers it said were lost)."""
    status = body.get("status") or {}
    ready = {str(r.get("name")) for r in status.get("routerStatus") or [] if r.get("ready")}
    lost = {str(r.get("name")) for r in status.get("lostRouters") or []}
    return ready, lost


def control_plane_away(body: Mapping[str, Any], observed: Observed) -> bool:
    """Every node of the mesh not ready at once is more often Kubernetes' control plane having
    been away (no kubelet could post its status; the node lifecycle controller judges them all
    together when it is back) than every node stopping.  It lasts, once seen (the last
    status's NodesNotReady), while any of those nodes or router pods is still not ready: the
    kubelets post again one by one, nodes and pods, and the first back is no reason to call
    the others' routers lost."""
    if observed.nodes_all_down:
        return True
    conditions = (body.get("status") or {}).get("conditions") or []
    before: Mapping[str, Any] = next((c for c in conditions if c.get("type") == "Reconciling"), {})
    return before.get("reason") == NODES_NOT_READY and bool(recovering(observed))


def recovering(observed: Observed) -> List[str]:
    """The routers on nodes not ready or whose pods are not ready (and that have a node)."""
    waiting = set(observed.on_unready_nodes)
    waiting |= {name for name, pod in observed.pods.items() if pod.node and not pod.ready}
    return sorted(waiting)


def routers_to_ask(body: Mapping[str, Any], observed: Observed) -> List[str]:
    """The routers whose management to reach: those whose pods are ready and, while the
    control plane was away, those on nodes not ready (their DNS names publish pods that are
    not ready): one that answers is not lost."""
    asked = set(observed.ready_pods)
    if control_plane_away(body, observed):
        asked |= set(recovering(observed))
    return sorted(asked)


def lost_routers(mesh: MeshSpec, body: Mapping[str, Any], *, observed: Observed,
                 outcomes: Mapping[str, RouterOutcome], rolling: str) -> List[LostRouter]:
    was_ready, was_lost = previous_routers(body)
    nodes = observed.nodes or {}
    lost: List[LostRouter] = []
    away = control_plane_away(body, observed)
    for rid in mesh.router_ids():
        pod = observed.pods.get(rid)
        node = pod.node if pod is not None else ""
        health = nodes.get(node) if node else None
        ran = rid in was_ready or rid in was_lost
        # Every node down at once and the router answering: the control plane was away.
        answers = away and rid in outcomes and outcomes[rid].reachable
        if node in observed.settling and not observed.nodes_all_down:
            continue  # judged once the node lifecycle controller's pass over the nodes is done
        if health is not None and not health.ready and not answers:
            detail = f"{health.reason}: {health.message}" if health.message else health.reason
            lost.append(LostRouter(rid, node, NODE_NOT_READY, f"its node {node} is not ready ({detail})"))
        elif not ran or rolling or answers:
            continue
        elif pod is None:
            lost.append(LostRouter(rid, "", POD_MISSING, "its pod is gone"))
        elif not pod.ready:
            where = f" on node {node}" if node else ""
            lost.append(LostRouter(rid, node, POD_NOT_READY, f"its pod is not ready{where}"))
        elif rid in outcomes and not outcomes[rid].reachable:
            lost.append(LostRouter(rid, node, MANAGEMENT_UNREACHABLE,
                                   f"its pod is ready but management does not answer: {outcomes[rid].error}"))
    return lost


def describe(lost: Sequence[LostRouter], size: int) -> str:
    """``2 of 3 routers lost: mesh-0 (its node w1 is not ready (...)), mesh-2 (...)``"""
    return f"{len(lost)} of {size} routers lost: " + ", ".join(f"{r.name} ({r.message})" for r in lost)


def lost_events(body: Mapping[str, Any], lost: Sequence[LostRouter], observed: Observed,
                size: int) -> List[Event]:
    """A Warning naming the routers newly lost, and a Normal Event naming those back (their pods
    ready again), each once: the last status says which were lost already."""
    _, was_lost = previous_routers(body)
    now_lost = {r.name for r in lost}
    events: List[Event] = []
    newly = [r for r in lost if r.name not in was_lost]
    if newly:
        events.append(Event(ref(body), "Warning", "RoutersLost", describe(newly, size)))
    back = sorted(n for n in was_lost - now_lost if (pod := observed.pods.get(n)) is not None and pod.ready)
    if back:
        events.append(Event(ref(body), "Normal", "RoutersBack",
                            f"{', '.join(back)} back: pod ready again and no longer counted as lost"))
    return events
