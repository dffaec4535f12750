"""One reconciliation of a RouterMesh and every routing resource that names it, in one pass:

    observe -> parse (model) -> certificates (tls) -> desired state -> render -> apply -> report

(a mesh paused with qdmesh.io/pause-reconciliation: observe -> report, nothing written).
Each stage is one function in its own module and hands its result to the next; none goes back
to an earlier one (the API server is read once, at the start, and the certificate Secrets in
one visit).  Synchronous (it runs in a worker thread of the kopf handlers); one mesh at a
time.  Returns what to write and announce instead of writing through kopf, so the handlers
stay thin."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

from . import apply, canary, contract, desired, links, model, observe, render, status, tls
from .keyed import KeyedLocks
from .kube import KubeApi, KubeRefused
from .links.status import mesh_link_statuses
from .operations import restarted_at

__all__ = ["ROUTING_PLURALS", "Event", "MeshReconciler", "Report", "mesh_converged", "reconcile_all"]

ROUTING_PLURALS = observe.ROUTING_PLURALS
Event = status.Event
Report = status.Report
mesh_converged = apply.mesh_converged

#: Seconds a node that turned not ready settles before its routers are called lost: the node
#: lifecycle controller marks every node it finds stale in one pass (a few seconds; every 5 s
#: by default), and a control plane back from an outage finds them all stale at once.
NODE_SETTLE_S = 10.0
#: Seconds after which a node no reconciliation has seen is forgotten (far longer than any
#: drift interval, so a node still in use is seen again well before).
NODE_FORGET_S = 3600.0

#: One reconciliation of a mesh at a time, across the worker threads.
MESH_LOCKS: KeyedLocks[Tuple[str, str]] = KeyedLocks()


class MeshReconciler:
    def __init__(self, kube: KubeApi, pool: apply.ClientPool | None = None,
                 urls: Callable[[model.MeshSpec, Sequence[str]], Dict[str, str]] = apply.router_urls,
                 node_settle_s: float = NODE_SETTLE_S) -> None:
        self.kube = kube
        self.node_settle_s = node_settle_s
        self._unready_since: Dict[str, float] = {}
        self._node_seen: Dict[str, float] = {}
        self._nodes_guard = threading.Lock()
        #: A pool shared by every mesh (given), or None: one pool per mesh, kept to the routers
        #: the mesh's last reconciliation reached and closed when the mesh goes.
        self.pool = pool
        self._pools: Dict[Tuple[str, str], apply.ClientPool] = {}
        self._pools_guard = threading.Lock()
        self.credentials = tls.ManagementCredentials()
        self._last: Dict[Tuple[str, str], Tuple[float, Report]] = {}
        self.urls = urls

    def reconcile(self, namespace: str, mesh_name: str, why: str = "change") -> Report:
        """Reconcile one mesh.  Requests that waited while another reconciliation of the same
        mesh ran get the result of one that started after they were made (it read everything
        they could have read), so a burst of changes costs two reconciliations, not one each."""
        requested = time.monotonic()
        key = (namespace, mesh_name)
        with MESH_LOCKS.hold(key):
            last = self._last.get(key)
            if last is not None and last[0] >= requested:
                # What that reconciliation did covers this request; its statuses are written by
                # whoever asked for it, so a burst of changes writes them once, not once each.
                return Report(mesh_found=last[1].mesh_found)
            start = time.monotonic()
            report = self._reconcile(namespace, mesh_name, why)
            report.seconds = time.monotonic() - start
            if report.mesh_found:
                self._last[key] = (start, report)
            else:
                self.forget(namespace, mesh_name)
            return report

    def forget(self, namespace: str, mesh_name: str) -> None:
        """Everything kept for a mesh that is gone: its last report, its management connections
        and the files of its certificate."""
        key = (namespace, mesh_name)
        self._last.pop(key, None)
        with self._pools_guard:
            pool = self._pools.pop(key, None)
        if pool is not None:
            pool.close()
        self.credentials.forget(namespace, mesh_name)

    def kept(self) -> Dict[str, int]:
        """How many meshes each kind of per-mesh state is kept for (tests, bench)."""
        with self._pools_guard:
            pools = len(self._pools)
        return {"reports": len(self._last), "pools": pools, "credentials": self.credentials.meshes(),
                "locks": len(MESH_LOCKS)}

    def _pool(self, key: Tuple[str, str]) -> apply.ClientPool:
        if self.pool is not None:
            return self.pool
        with self._pools_guard:
            return self._pools.setdefault(key, apply.ClientPool())

    def orphan_status(self, kind: str, body: Mapping[str, Any]) -> Dict[str, Any]:
        """Status of a routing resource whose mesh does not exist."""
        return status.orphan_status(body)

    def _reconcile(self, namespace: str, mesh_name: str, why: str) -> Report:
        # observe: everything the later stages decide from, read once
        observed = observe.observe(self.kube, namespace, mesh_name)
        stored = [((ROUTING_PLURALS[kind], str(item["metadata"]["name"])), item)
                  for kind, item in observed.routing]
        stored += [((links.PLURAL, str(item["metadata"]["name"])), item)
                   for item in (observed.links.bodies if observed.links else [])]
        if observed.body is not None:
            stored.append(((contract.MESH_PLURAL, mesh_name), observed.body))
        report = self._decide(observed, namespace, mesh_name, why)
        report.unchanged = status.unchanged_statuses(report.statuses, stored)
        return report

    def _decide(self, observed: observe.Observed, namespace: str, mesh_name: str, why: str) -> Report:
        body = observed.body
        if body is None:
            return status.orphans_report(observed.routing)
        recheck = self._settle(observed)
        # The handler writes a reconciliation's status after this mesh's lock is released, so
        # the next one may read the status before that; what it decides from the last status
        # (lost routers, conditions' transition times, Events posted once) takes the newest.
        last = self._last.get((namespace, mesh_name))
        newest = last[1].statuses.get((contract.MESH_PLURAL, mesh_name)) if last else None
        if newest is not None:
            body = {**body, "status": newest}
        if observed.paused:  # nothing changes for the mesh nor its routing resources
            return status.paused_report(body, [(ROUTING_PLURALS[kind], item)
                                               for kind, item in observed.routing])
        # model: typed specs; a bad RouterMesh stops here, naming the field
        try:
            parsed = model.parse_inputs(body, observed.routing)
        except model.SpecError as e:
            return status.stalled_report(body, str(e), event=str(e))
        mesh, owner = parsed.mesh, parsed.owner
        override = apply.overrides()
        in_cluster = override is None
        urls = self.urls(mesh, status.routers_to_ask(body, observed))
        # The operator talks to routers this time (so it needs its certificate): some are ready,
        # and it reaches them in the cluster rather than through QDMESH_ROUTER_URLS.
        needs_management = in_cluster and (bool(urls) or observed.edges_ready)
        # tls: the mesh's certificates, made or renewed, and the operator's own for management
        try:
            certificates = tls.resolve_certificates(
                self.kube.core, mesh, owner=owner, live_stateful_set=observed.stateful_set,
                live_edge_workloads=observed.edge_workloads, credentials=self.credentials,
                needs_management=needs_management, running=last[1].tls_running if last else None,
                running_edges=last[1].tls_running_edges if last else [None] * len(mesh.edge_groups))
        except tls.CertificateError as e:
            return status.stalled_report(body, f"spec.interRouter.tls: {e}", event=str(e))
        except KubeRefused as e:
            return status.refused_report(body, e)
        # desired: every router's entities (with the connectors of the mesh's MeshLinks)
        linking = links.plan_links(observed.links, mesh, observed.stateful_set)
        linked = linking.links
        state = desired.mesh_state(mesh, parsed.routing, manage_inter_router=in_cluster,
                                   links=linking.entities)
        state.links_volume = linking.volume
        # render: configs and Kubernetes objects
        try:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) if parsed.manual_roll else None
            rendered = render.render_mesh(
                state, owner, certificates, restarted_at=stamp or observed.restarted_at,
                edge_restarted_at=_edge_restarts(mesh, observed, stamp))
        except render.RenderError as e:
            return status.stalled_report(body, str(e), event=None)
        if linked.ready or linked.mounted_data:  # before the routers are asked to load the files
            rendered.objects.append(links.links_secret(mesh, owner, linked.ready))
        # apply: Kubernetes objects, then live entities on each router, then the StatefulSet
        pool = self._pool((namespace, mesh_name))
        try:
            applied = apply.apply_mesh(self.kube, pool=pool, rendered=rendered, state=state,
                                       observed=observed, urls=urls, certificates=certificates,
                                       override=override, manual_roll=parsed.manual_roll)
        except KubeRefused as e:
            return status.refused_report(body, e, certificates)
        if pool is not self.pool:  # routers that left the mesh, edge pods replaced: closed
            pool.retain([*urls.values(), *(r.url for r in applied.edge_routers)])
        tls_running = _tls_running(mesh, observed, applied, certificates)
        # canary: probes between the routers through the mesh, on the drift schedule (or what
        # the routers measured of their neighbours)
        if mesh.canary_mode == "Routers":
            results, round_no = canary.from_routers(applied.outcomes), -1
        else:
            results, round_no = canary.next_round(
                pool, outcomes=applied.outcomes, urls=urls, tls=certificates.management,
                previous=last[1].canary if last else {}, last_round=last[1].canary_round if last else -1,
                probe=why == "drift")
        # status: every status to write and every Event to post
        report = status.reconciled_report(body, parsed=parsed, observed=observed, state=state,
                                          certificates=certificates, applied=applied, why=why,
                                          last_in_sync=last[1].in_sync if last else {},
                                          canary=canary.summarise(results))
        report.recheck_in = recheck
        for name, link_status in mesh_link_statuses(linked, mesh.size, applied.outcomes).items():
            report.statuses[(links.PLURAL, name)] = link_status
        report.canary, report.canary_round = results, round_no
        report.tls_running, report.tls_running_edges = tls_running
        return report

    def _settle(self, observed: Any) -> float | None:
        """Marks the nodes that turned not ready within the settle time (by this process's
        clock, first seen here); returns when to look again, or None."""
        now = time.monotonic()
        with self._nodes_guard:
            for name, health in (observed.nodes or {}).items():
                self._node_seen[name] = now
                if health.ready:
                    self._unready_since.pop(name, None)
                else:
                    self._unready_since.setdefault(name, now)
            # Nodes no mesh has run on for a while (deleted, scaled away) are forgotten.
            for name in [n for n, seen in self._node_seen.items() if now - seen > NODE_FORGET_S]:
                self._node_seen.pop(name, None)
                self._unready_since.pop(name, None)
            left = {name: self._unready_since[name] + self.node_settle_s - now
                    for name in (observed.nodes or {}) if name in self._unready_since}
        observed.settling = {name for name, seconds in left.items() if seconds > 0}
        return max((left[n] for n in observed.settling), default=None)


def reconcile_all(reconciler: MeshReconciler, namespace: str, mesh_name: str | None) -> Report | None:
    return None if mesh_name is None else reconciler.reconcile(namespace, mesh_name)


def _edge_restarts(mesh: model.MeshSpec, observed: observe.Observed, stamp: str | None) -> Dict[str, str]:
    """Each edge group's manual-roll stamp: ``stamp`` when a manual roll is asked for now,
    else what its live workload carries."""
    stamps = {}
    for group in mesh.edge_groups:
        value = stamp or restarted_at(observed.edge_workloads.get(group.name))
        if value:
            stamps[group.name] = value
    return stamps


def _tls_running(mesh: model.MeshSpec, observed: observe.Observed, applied: apply.Applied,
                 certificates: tls.Certificates) -> Tuple[str | None, List[str | None]]:
    """The certificate revision every interior router runs, and each edge group's (None where
    some router of the group did not answer or runs other material)."""
    interior = apply.running_revision(applied.tls, mesh.size, certificates.revision)
    edges: List[str | None] = []
    for group in mesh.edge_groups:
        names = {r.name for r in applied.edge_routers if r.group == group.name}
        pods = sum(1 for p in observed.edge_pods.values() if p.group == group.name)
        reloads = {n: r for n, r in applied.edge_tls.items() if n in names}
        edges.append(apply.running_revision(reloads, max(pods, len(names)), certificates.edge_revision))
    return interior, edges
