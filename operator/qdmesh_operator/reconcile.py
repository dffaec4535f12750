"""One reconciliation of a RouterMesh and every routing resource that names it: model ->
render -> apply (Kubernetes objects, then live entities on each router) -> status and Events.

Synchronous (it runs in a worker thread of the kopf handlers); one mesh at a time.  Returns
what to write and announce instead of writing through kopf, so the handlers stay thin."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

from kubernetes.client.rest import ApiException

from . import contract, status
from .apply.credentials import CredentialsError, ManagementCredentials
from .apply.kube import KubeApi
from .apply.management import ClientPool, RouterOutcome, sync_mesh
from .model import topology
from .model.desired import MeshState, mesh_state
from .model.errors import SpecError
from .model.mesh import MeshSpec, parse_mesh
from .model.routing import PARSERS, RoutingSpec
from .plan import CREATE
from .render.conf import RenderError, render_all
from .render.manifests import CERT_ANNOTATION, mesh_objects, owner_reference
from .rolling import HELD, TEMPLATE_HASH, next_partition, rolled_out_annotation
from .router_urls import overrides, router_urls
from .status import Verdict
from .tls import mounted
from .tls.certs import CertificateError
from .tls.secrets import ensure_managed_tls

ROUTING_PLURALS = {"LinkRoute": contract.LINK_ROUTE_PLURAL, "AutoLink": contract.AUTO_LINK_PLURAL,
                   "VhostPolicy": contract.VHOST_PLURAL}


@dataclass
class Event:
    """An Event to post about ``target`` (a body with apiVersion, kind and metadata)."""

    target: Any  # a kopf Body: apiVersion, kind and metadata (name, namespace, uid)
    type: str
    reason: str
    message: str


@dataclass
class Report:
    """The result of one reconciliation: statuses by (plural, name), Events, and numbers."""

    statuses: Dict[Tuple[str, str], Dict[str, Any]] = field(default_factory=dict)
    events: List[Event] = field(default_factory=list)
    operations: int = 0
    failures: int = 0
    repaired: int = 0
    mesh_found: bool = True
    seconds: float = 0.0


_locks: Dict[Tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()


def mesh_lock(namespace: str, name: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((namespace, name), threading.Lock())


def ref(body: Mapping[str, Any]) -> Dict[str, Any]:
    meta = body.get("metadata") or {}
    return {"apiVersion": body.get("apiVersion", contract.API_VERSION), "kind": body.get("kind"),
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                         "uid": meta.get("uid")}}


class MeshReconciler:
    def __init__(self, kube: KubeApi, pool: ClientPool | None = None,
                 urls: Callable[[MeshSpec, Sequence[str]], Dict[str, str]] = router_urls) -> None:
        self.kube = kube
        self.pool = pool or ClientPool()
        self.credentials = ManagementCredentials()
        self._last: Dict[Tuple[str, str], Tuple[float, Report]] = {}
        self.urls = urls

    # -- entry points ---------------------------------------------------------------------------
    def reconcile(self, namespace: str, mesh_name: str, why: str = "change") -> Report:
        """Reconcile one mesh.  Requests that waited while another reconciliation of the same
        mesh ran get the result of one that started after they were made (it read everything
        they could have read), so a burst of changes costs two reconciliations, not one each."""
        requested = time.monotonic()
        key = (namespace, mesh_name)
        with mesh_lock(namespace, mesh_name):
            last = self._last.get(key)
            if last is not None and last[0] >= requested:
                return Report(statuses=last[1].statuses, mesh_found=last[1].mesh_found)
            start = time.monotonic()
            report = self._reconcile(namespace, mesh_name, why)
            report.seconds = time.monotonic() - start
            self._last[key] = (start, report)
            return report

    def orphan_status(self, kind: str, body: Mapping[str, Any]) -> Dict[str, Any]:
        """Status of a routing resource whose mesh does not exist."""
        meta = body["metadata"]
        mesh_name = (body.get("spec") or {}).get("meshRef")
        verdict = Verdict.stalled(status.MESH_NOT_FOUND,
                                  f"RouterMesh {mesh_name!r} not found in namespace {meta['namespace']!r}")
        return status.status_of(verdict, int(meta.get("generation") or 0), body.get("status"), routers=[])

    # -- the work -----------------------------------------------------------------------------
    def _reconcile(self, namespace: str, mesh_name: str, why: str) -> Report:
        report = Report()
        body = self.kube.get(contract.MESH_PLURAL, namespace, mesh_name)
        routing_bodies = self._routing_bodies(namespace, mesh_name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            report.mesh_found = False
            for kind, rbody in routing_bodies:
                key = (ROUTING_PLURALS[kind], rbody["metadata"]["name"])
                report.statuses[key] = self.orphan_status(kind, rbody)
            return report
        generation = int(body["metadata"].get("generation") or 0)
        try:
            mesh = parse_mesh(mesh_name, namespace, body.get("spec") or {})
        except SpecError as e:
            report.statuses[(contract.MESH_PLURAL, mesh_name)] = status.status_of(
                Verdict.stalled(status.INVALID_SPEC, str(e)), generation, body.get("status"))
            report.events.append(Event(ref(body), "Warning", status.INVALID_SPEC, str(e)))
            return report

        routing, invalid = self._parse_routing(routing_bodies)
        state = mesh_state(mesh, routing)
        try:
            confs = render_all(state)
        except RenderError as e:
            report.statuses[(contract.MESH_PLURAL, mesh_name)] = status.status_of(
                Verdict.stalled(status.INVALID_SPEC, str(e)), generation, body.get("status"))
            return report

        previous_hash = (body.get("status") or {}).get("configHash")
        kind = ""
        try:
            kind = "Secret"
            cert_revision = self._managed_tls(report, body, mesh)
            secrets_digest = mounted.digest(self.kube.core, mesh)
            objects = mesh_objects(mesh, confs, owner_reference(body), cert_revision, secrets_digest)
            for obj in objects[:-1]:  # everything but the StatefulSet, which comes last
                kind = obj["kind"]
                self.kube.apply(obj)
            kind = ""
            if not mesh.console.enabled:
                kind = "Deployment"
                if self.kube.delete_console(namespace, mesh_name):
                    report.events.append(Event(ref(body), "Normal", "ConsoleRemoved",
                                               f"web console {contract.console(mesh_name)} removed "
                                               "(spec.console.enabled is false)"))
                kind = ""
            live_sts = self.kube.stateful_set(namespace, mesh_name)
            pods = self.kube.pods(namespace, mesh_name)
            ready_pods = sorted(name for name, pod in pods.items() if pod.ready)
            state.manage_inter_router = overrides() is None
            outcomes = self._sync(report, body, state, ready_pods)
            converged = mesh_converged(mesh, outcomes)
            sts_obj = objects[-1]
            partition, rolling = next_partition(mesh.size, sts_obj["metadata"]["annotations"][TEMPLATE_HASH],
                                                live_sts, list(pods.values()), converged)
            sts_obj["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = partition
            kind = "StatefulSet"
            self.kube.apply(sts_obj)
            kind = ""
            sts = dict((live_sts or {}).get("status") or {})
        except CertificateError as e:
            report.statuses[(contract.MESH_PLURAL, mesh_name)] = status.status_of(
                Verdict.stalled(status.INVALID_SPEC, f"spec.interRouter.tls: {e}"), generation,
                body.get("status"))
            report.events.append(Event(ref(body), "Warning", status.INVALID_SPEC, str(e)))
            return report
        except ApiException as e:
            reason = _api_reason(e)
            if kind == "Certificate" and e.status == 404:
                reason = ("spec.interRouter.tls.mode CertManager needs cert-manager (cert-manager.io/v1 "
                          "Certificate), which is not installed")
            what = kind or "a request"
            verdict = (Verdict.stalled(status.APPLY_FAILED, f"Kubernetes refused {what}: {reason}")
                       if e.status in (400, 403, 404, 422) else
                       Verdict.progressing(status.PROGRESSING, f"Kubernetes API: {reason}"))
            report.statuses[(contract.MESH_PLURAL, mesh_name)] = status.status_of(verdict, generation,
                                                                                 body.get("status"))
            report.events.append(Event(ref(body), "Warning", verdict.reason, verdict.message))
            return report
        restart_hash = mesh.restart_hash()
        if rolling and not rolling.startswith(HELD):  # one Event per step, not one per check
            settings_changed = bool(previous_hash) and previous_hash != restart_hash
            why_roll = ("router settings that need a restart changed (router timers, policy or inter-router "
                        "TLS)" if settings_changed else "the pod template changed")
            report.events.append(Event(ref(body), "Normal", "RollingRestart", f"{rolling} ({why_roll})"))

        self._count(report, outcomes, why)
        self._mesh_status(report, body, mesh, state, outcomes, sts, restart_hash, rolling)
        self._routing_statuses(report, mesh, state, routing_bodies, invalid, outcomes)
        self._events(report, body, outcomes, why)
        return report

    def _sync(self, report: Report, body: Mapping[str, Any], state: MeshState,
              ready_pods: Sequence[str]) -> Dict[str, RouterOutcome]:
        """Bring the ready routers to the desired entities through their management listener,
        with the mesh's certificate when its routers use TLS."""
        mesh = state.mesh
        urls = self.urls(mesh, ready_pods)
        tls = None
        if overrides() is None and urls:
            try:
                tls = self.credentials.for_mesh(self.kube.core, mesh)
            except CredentialsError as e:
                report.events.append(Event(ref(body), "Warning", status.ROUTER_UNREACHABLE, str(e)))
                return {}
        return sync_mesh(state, urls, self.pool, tls=tls)

    def _managed_tls(self, report: Report, body: Mapping[str, Any], mesh: MeshSpec) -> str | None:
        """Mode Managed: the CA and the routers' certificate in their Secrets (made once, renewed
        near expiry, the CA rotated in steps); the revision for the pod template."""
        if mesh.inter_router_tls.mode != "Managed":
            return None
        live = self.kube.stateful_set(mesh.namespace, mesh.name)
        running = rolled_out_annotation(live, mesh.size, CERT_ANNOTATION)
        managed = ensure_managed_tls(self.kube.core, mesh, owner_reference(body), running=running)
        report.events.extend(Event(ref(body), type_, reason, message)
                             for type_, reason, message in managed.events)
        return managed.revision

    def _routing_bodies(self, namespace: str, mesh_name: str) -> List[Tuple[str, Dict[str, Any]]]:
        found = []
        for kind, plural in ROUTING_PLURALS.items():
            for item in self.kube.list(plural, namespace):
                if (item.get("spec") or {}).get("meshRef") == mesh_name and \
                        not item["metadata"].get("deletionTimestamp"):
                    found.append((kind, item))
        return found

    def _parse_routing(self, bodies: Sequence[Tuple[str, Dict[str, Any]]]
                       ) -> Tuple[List[RoutingSpec], Dict[Tuple[str, str], SpecError]]:
        specs: List[RoutingSpec] = []
        invalid: Dict[Tuple[str, str], SpecError] = {}
        for kind, item in bodies:
            name = item["metadata"]["name"]
            try:
                specs.append(PARSERS[kind](name, item.get("spec") or {}))
            except SpecError as e:
                invalid[(kind, name)] = e
        return specs, invalid

    @staticmethod
    def _count(report: Report, outcomes: Mapping[str, RouterOutcome], why: str) -> None:
        for outcome in outcomes.values():
            report.operations += len(outcome.results)
            report.failures += len(outcome.failures)
            if why == "drift":
                report.repaired += len([r for r in outcome.results if r.ok])

    def _mesh_status(self, report: Report, body: Mapping[str, Any], mesh: MeshSpec, state: MeshState,
                     outcomes: Mapping[str, RouterOutcome], sts: Mapping[str, Any],
                     restart_hash: str, rolling: str) -> None:
        generation = int(body["metadata"].get("generation") or 0)
        ready_replicas = int(sts.get("readyReplicas") or 0)
        routing_names = {e.name for rid in state.entities for e in state.entities[rid]
                         if e.type in ("linkRoute", "autoLink", "vhost")}
        mesh_failures = [r.error for o in outcomes.values() for r in o.failures
                         if r.op.name not in routing_names]
        unreachable = [o.error for o in outcomes.values() if not o.reachable]
        routers = []
        for rid in mesh.router_ids():
            outcome = outcomes.get(rid)
            entry: Dict[str, Any] = {"name": rid, "ready": bool(outcome and outcome.in_sync)}
            if outcome is None:
                entry["message"] = "pod not ready"
            elif not outcome.reachable:
                entry["message"] = str(outcome.error)
            else:
                entry.update(peers=int(outcome.router.get("nodeCount") or 0),
                             connections=int(outcome.router.get("connectionCount") or 0),
                             addresses=int(outcome.router.get("addrCount") or 0))
                if outcome.failures:
                    entry["message"] = "; ".join(str(r.error) for r in outcome.failures)[:1000]
            routers.append(entry)
        if mesh_failures:
            verdict = Verdict.stalled(status.APPLY_FAILED, "; ".join(str(m) for m in mesh_failures[:3]))
        elif rolling:
            verdict = Verdict.progressing(status.ROLLING_RESTART, rolling)
        elif ready_replicas < mesh.size:
            verdict = Verdict.progressing(status.ROUTERS_NOT_READY,
                                          f"{ready_replicas}/{mesh.size} routers ready")
        elif unreachable or len(outcomes) < mesh.size:
            verdict = Verdict.progressing(status.ROUTER_UNREACHABLE,
                                          "; ".join(str(u) for u in unreachable[:3])
                                          or "routers not reachable yet")
        else:
            verdict = Verdict.ready(f"{mesh.size} routers ready, configuration live on every router")
        previous = body.get("status") or {}
        converged = mesh_converged(mesh, outcomes)
        new = status.status_of(verdict, generation, previous, routers=int(sts.get("replicas") or 0),
                               readyRouters=ready_replicas,
                               selector=f"qdmesh.io/mesh={mesh.name}", image=mesh.image,
                               configHash=restart_hash, routerStatus=routers)
        new["conditions"].append(status.condition(
            status.MESH_CONVERGED, converged, "AllRoutersSeeEachOther" if converged else "NotConverged",
            f"every router reaches the other {mesh.size - 1}, each over its own links" if converged
            else "not every router reaches every other router over its own links yet", generation,
            previous.get("conditions") or []))
        report.statuses[(contract.MESH_PLURAL, mesh.name)] = new

    def _routing_statuses(self, report: Report, mesh: MeshSpec, state: MeshState,
                          bodies: Sequence[Tuple[str, Dict[str, Any]]],
                          invalid: Mapping[Tuple[str, str], SpecError],
                          outcomes: Mapping[str, RouterOutcome]) -> None:
        problems = {(p.kind, p.name): p.error for p in state.problems}
        for kind, item in bodies:
            meta = item["metadata"]
            name = meta["name"]
            generation = int(meta.get("generation") or 0)
            key = (ROUTING_PLURALS[kind], name)
            error = invalid.get((kind, name)) or problems.get((kind, name))
            if error is not None:
                reason = status.UNKNOWN_REFERENCE if (kind, name) in problems else status.INVALID_SPEC
                report.statuses[key] = status.status_of(Verdict.stalled(reason, str(error)), generation,
                                                        item.get("status"), routers=[])
                if (item.get("status") or {}).get("observedGeneration") != generation:
                    report.events.append(Event(ref(item), "Warning", reason, str(error)))
                continue
            spec = PARSERS[kind](name, item.get("spec") or {})
            entities = spec.entities(mesh)
            report.statuses[key] = self._routing_status(kind, item, entities, mesh, outcomes, generation)

    @staticmethod
    def _routing_status(kind: str, item: Mapping[str, Any], entities: Sequence[Any], mesh: MeshSpec,
                        outcomes: Mapping[str, RouterOutcome], generation: int) -> Dict[str, Any]:
        names = {e.name for e in entities}
        type_ = entities[0].type
        routers = []
        failures: List[str] = []
        applied = active = 0
        for rid in mesh.router_ids():
            outcome = outcomes.get(rid)
            entry: Dict[str, Any] = {"name": rid, "applied": False}
            if outcome is None or not outcome.reachable:
                entry["message"] = "router not reachable" if outcome is None else str(outcome.error)
                routers.append(entry)
                continue
            mine = [r for r in outcome.failures if r.op.name in names]
            rows = [row for row in outcome.live.get(type_, []) if row.get("name") in names]
            entry["applied"] = not mine and len(rows) == len(names)
            applied += entry["applied"]
            if mine:
                entry["message"] = "; ".join(str(r.error) for r in mine)
                failures.extend(str(r.error) for r in mine)
            if kind == "AutoLink" and rows:
                entry["operStatus"] = str(rows[0].get("operStatus") or "")
                if rows[0].get("lastError"):
                    entry["lastError"] = str(rows[0]["lastError"])
                active += entry["operStatus"] == "active"
            elif rows and "operStatus" in rows[0]:
                entry["operStatus"] = str(rows[0].get("operStatus") or "")
            routers.append(entry)
        if failures:
            verdict = Verdict.stalled(status.APPLY_FAILED, f"a router refused it: {failures[0]}")
        elif applied == mesh.size:
            message = f"live on all {mesh.size} routers"
            if kind == "AutoLink":
                message += f"; link active on {active}"
            verdict = Verdict.ready(message)
        else:
            verdict = Verdict.progressing(status.ROUTER_UNREACHABLE, f"live on {applied}/{mesh.size} routers")
        extra: Dict[str, Any] = {"routers": routers}
        if kind == "AutoLink":
            extra["activeRouters"] = active
        return status.status_of(verdict, generation, item.get("status"), **extra)

    @staticmethod
    def _events(report: Report, body: Mapping[str, Any], outcomes: Mapping[str, RouterOutcome],
                why: str) -> None:
        done = [(rid, r) for rid, o in outcomes.items() for r in o.results if r.ok]
        if done and why == "drift":
            repaired = sorted({r.op.describe() for _, r in done})
            report.events.append(Event(ref(body), "Warning", "DriftRepaired",
                                       f"{len(done)} operations on {len({rid for rid, _ in done})} routers "
                                       "put back what had changed by hand: " + "; ".join(repaired[:5])))
        elif done:
            created = len([1 for _, r in done if r.op.action == CREATE])
            report.events.append(Event(ref(body), "Normal", "Applied",
                                       f"{len(done)} live changes ({created} created) on "
                                       f"{len({rid for rid, _ in done})} routers, no restart"))
        for rid, outcome in outcomes.items():
            for failure in outcome.failures[:3]:
                report.events.append(Event(ref(body), "Warning", status.APPLY_FAILED,
                                           f"{rid}: {failure.error}"))


def mesh_converged(mesh: MeshSpec, outcomes: Mapping[str, RouterOutcome]) -> bool:
    """Every router answers, reaches every other router, and has every inter-router link the
    topology gives it.  Reaching all routers is not enough: a replaced router's links come
    back one connector retry at a time, and until they do its peers may be reached only
    through the next router to restart, which would cut the mesh when that one goes."""
    if len(outcomes) != mesh.size:
        return False
    ids = mesh.router_ids()
    pairs = topology.edges(mesh.topology, mesh.size, mesh.degree)
    for ordinal, rid in enumerate(ids):
        outcome = outcomes.get(rid)
        if outcome is None or not outcome.reachable:
            return False
        if int(outcome.router.get("nodeCount") or 0) != mesh.size - 1:
            return False
        if not {ids[n] for n in topology.neighbours(pairs, ordinal)} <= set(outcome.direct_peers):
            return False
    return True


def _api_reason(e: ApiException) -> str:
    import json

    try:
        return str(json.loads(e.body or "").get("message"))
    except Exception:
        return f"{e.status} {e.reason}"


def reconcile_all(reconciler: MeshReconciler, namespace: str, mesh_name: str | None) -> Report | None:
    return None if mesh_name is None else reconciler.reconcile(namespace, mesh_name)
