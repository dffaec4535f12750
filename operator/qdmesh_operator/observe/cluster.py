"""The first read of a reconciliation: the RouterMesh, the routing resources that name it, and
what runs for it (the StatefulSet and its pods).  Everything later stages decide from is read
here, once, so no stage goes back to the API server to look something up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Set, Tuple

from .. import contract
from ..kube.api import EdgePod, KubeApi, NodeHealth
from ..operations import RESTARTED_AT_ANNOTATION, paused
from ..rolling import PodState
from .links import ObservedLinks, read_links

ROUTING_PLURALS = {"LinkRoute": contract.LINK_ROUTE_PLURAL, "AutoLink": contract.AUTO_LINK_PLURAL,
                   "VhostPolicy": contract.VHOST_PLURAL}


@dataclass
class Observed:
    """What the API server holds for one mesh.  ``body`` is None when the RouterMesh is gone
    (or going); the workload fields are then left empty."""

    namespace: str
    name: str
    body: Dict[str, Any] | None
    #: (kind, body) of every LinkRoute, AutoLink and VhostPolicy whose meshRef is this mesh.
    routing: List[Tuple[str, Dict[str, Any]]] = field(default_factory=list)
    stateful_set: Dict[str, Any] | None = None
    pods: Dict[str, PodState] = field(default_factory=dict)
    #: The edge groups' Deployments and DaemonSets as they run (with ``kind``), by group name.
    edge_workloads: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    edge_pods: Dict[str, EdgePod] = field(default_factory=dict)

    #: The interior routers whose pods are ready (only they can answer management).
    ready_pods: List[str] = field(default_factory=list)
    #: Every node an interior router runs on is not ready, all at once.
    nodes_all_down: bool = False
    #: The interior routers on nodes that are not ready.
    on_unready_nodes: List[str] = field(default_factory=list)
    #: Nodes not ready for less than the settle time, by the operator's clock (reconcile.py).
    settling: Set[str] = field(default_factory=set)
    #: Whether any edge router's pod is ready.
    edges_ready: bool = False
    #: The health of each node an interior router's pod is on, by node name; None when the
    #: operator may not read nodes.
    nodes: Dict[str, NodeHealth] | None = field(default_factory=dict)
    #: The mesh carries qdmesh.io/pause-reconciliation "true": nothing is to change for it.
    paused: bool = False
    #: When the routers were last asked to restart by hand (their pod template's
    #: qdmesh.io/restarted-at), kept so that the template changes only on a new request.
    restarted_at: str | None = None
    #: The MeshLinks naming the mesh and what they redeemed (links/observe.py).
    links: ObservedLinks | None = None


def routing_bodies(kube: KubeApi, namespace: str, mesh_name: str) -> List[Tuple[str, Dict[str, Any]]]:
    found = []
    for kind, plural in ROUTING_PLURALS.items():
        for item in kube.list(plural, namespace):
            if (item.get("spec") or {}).get("meshRef") == mesh_name and \
                    not item["metadata"].get("deletionTimestamp"):
                found.append((kind, item))
    return found


def observe(kube: KubeApi, namespace: str, mesh_name: str) -> Observed:
    body = kube.get(contract.MESH_PLURAL, namespace, mesh_name)
    observed = Observed(namespace, mesh_name, body, routing_bodies(kube, namespace, mesh_name))
    if body is None or body["metadata"].get("deletionTimestamp"):
        observed.body = None
        return observed
    observed.paused = paused(body)
    if observed.paused:  # what runs for it is not looked at: nothing will be decided from it
        return observed
    observed.links = read_links(kube, namespace, mesh_name)
    observed.stateful_set = kube.stateful_set(namespace, mesh_name)
    observed.pods = kube.pods(namespace, mesh_name)
    template = ((observed.stateful_set or {}).get("spec") or {}).get("template") or {}
    observed.restarted_at = ((template.get("metadata") or {}).get("annotations") or {}).get(
        RESTARTED_AT_ANNOTATION)
    # A node that stops takes its routers with it, and the operator learns of it only from the
    # node (and, ~40 s later, from the pods the node lifecycle controller marks not ready).
    observed.nodes = kube.node_health(pod.node for pod in observed.pods.values() if pod.node)
    for workload in kube.edge_workloads(namespace, mesh_name):
        group = ((workload.get("metadata") or {}).get("labels") or {}).get("qdmesh.io/edge-group")
        if group:
            observed.edge_workloads[str(group)] = workload
    observed.edge_pods = kube.edge_pods(namespace, mesh_name)
    observed.ready_pods = sorted(name for name, pod in observed.pods.items() if pod.ready)
    health = observed.nodes or {}
    on_nodes = {name: pod.node for name, pod in observed.pods.items() if pod.node in health}
    observed.nodes_all_down = bool(on_nodes) and not any(health[n].ready for n in on_nodes.values())
    observed.on_unready_nodes = sorted(name for name, node in on_nodes.items() if not health[node].ready)
    observed.edges_ready = any(pod.ready for pod in observed.edge_pods.values())
    return observed
