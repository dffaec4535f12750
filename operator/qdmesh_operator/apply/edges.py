"""The apply stage for edge groups: their Services and workloads through server-side apply,
groups that left the spec removed, and the desired entities on every ready edge router through
its management listener (reached at its pod's address, with the mesh's certificate)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from kubernetes.client.rest import ApiException

from .. import contract
from ..desired.state import MeshState
from ..edge_rollout import gate
from ..kube.api import EdgePod, KubeApi, KubeRefused
from ..tls.credentials import TlsFiles
from .management import ClientPool, RouterOutcome, sync_router


@dataclass(frozen=True)
class EdgeRouter:
    """An edge router to manage: its pod (or, outside a cluster, a name), group and URL."""

    name: str
    group: str
    url: str


def edge_routers(state: MeshState, pods: Mapping[str, EdgePod], tls: bool,
                 override: Mapping[str, str] | None) -> List[EdgeRouter]:
    """The ready edge routers of the mesh's groups.  In a cluster: each ready pod at its IP
    address.  Outside (QDMESH_ROUTER_URLS, as the tests run local routers): every entry named
    ``<namespace>/edge:<group>:<name>``."""
    mesh = state.mesh
    groups = {g.name for g in mesh.edge_groups}
    if override is not None:
        prefix = f"{mesh.namespace}/edge:"
        found = []
        for key, url in sorted(override.items()):
            if key.startswith(prefix):
                group, _, name = key[len(prefix):].partition(":")
                if group in groups and name:
                    found.append(EdgeRouter(name, group, url))
        return found
    scheme = "amqps" if tls else "amqp"
    return [EdgeRouter(pod.name, pod.group, f"{scheme}://{_host(pod.ip)}:{contract.MANAGEMENT_PORT}")
            for pod in sorted(pods.values(), key=lambda p: p.name)
            if pod.ready and pod.ip and pod.group in groups]


def _host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def apply_edge_objects(kube: KubeApi, state: MeshState, objects: Sequence[Dict[str, Any]],
                       live_workloads: Mapping[str, Mapping[str, Any]], window_open: bool = True
                       ) -> Tuple[List[Tuple[str, str, str]], List[str]]:
    """Apply every group's objects, remove groups no longer in the spec (and a workload whose
    group changed between size and perNode); Events to post, and the groups whose pod
    template change waits for a maintenance window (``window_open`` False: edge_rollout.py)."""
    events: List[Tuple[str, str, str]] = []
    pending: List[str] = []
    kinds = {g.name: "DaemonSet" if g.per_node else "Deployment" for g in state.mesh.edge_groups}
    for group, workload in sorted(live_workloads.items()):
        if group in kinds and workload.get("kind") != kinds[group]:
            _delete(kube, state.mesh.namespace, workload, workload_only=True)
            events.append(("Normal", "EdgeGroupReplaced", f"edge group {group} is now a {kinds[group]}: "
                           f"its {workload.get('kind')} {workload['metadata']['name']} removed"))
    groups = {contract.edge_group(state.mesh.name, g.name): g.name for g in state.mesh.edge_groups}
    for obj in objects:
        name = groups.get(obj["metadata"]["name"])
        if obj["kind"] in ("Deployment", "DaemonSet") and name is not None:
            live = live_workloads.get(name)
            if live is not None and live.get("kind") != obj["kind"]:
                live = None  # removed above: the new kind starts afresh
            if gate(obj, live, window_open):
                pending.append(name)
        try:
            kube.apply(obj)
        except ApiException as e:
            raise KubeRefused(str(obj["kind"]), e) from None
    wanted = {g.name for g in state.mesh.edge_groups}
    for group, workload in sorted(live_workloads.items()):
        if group in wanted:
            continue
        _delete(kube, state.mesh.namespace, workload)
        events.append(("Normal", "EdgeGroupRemoved", f"edge group {group} removed "
                       f"({workload.get('kind')} {workload['metadata']['name']}, its Service and "
                       "PodDisruptionBudget)"))
    return events, pending


def _delete(kube: KubeApi, namespace: str, workload: Mapping[str, Any], workload_only: bool = False) -> None:
    try:
        kube.delete_edge_group(namespace, workload, workload_only)
    except ApiException as e:
        raise KubeRefused(str(workload.get("kind") or "Deployment"), e) from None


def sync_edges(state: MeshState, routers: Sequence[EdgeRouter], pool: ClientPool,
               tls: TlsFiles | None) -> Dict[str, RouterOutcome]:
    """Every edge router in parallel, as sync_mesh does interior ones; by router (pod) name."""
    if not routers:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(routers)), thread_name_prefix="qdmesh-edge") as workers:
        futures = {r.name: workers.submit(sync_router, r.name, r.url,
                                          desired=state.edge_live_entities(r.group),
                                          keep=state.edge_restart_only_names(r.group), pool=pool,
                                          tls=tls if r.url.startswith("amqps:") else None, edge=True)
                   for r in routers}
        return {name: f.result() for name, f in futures.items()}
