"""kopf handlers: thin.  Each reads which mesh is concerned, runs the reconciler in a worker
thread, writes the statuses it computed (status subresource only: the operator never writes
spec) and posts its Events.  Load with ``kopf run -m qdmesh_operator.handlers`` or through
``qdmesh-operator``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

from . import contract, leader, owned_watch
from .config import SETTINGS, load_kube_credentials
from .drift import DriftSchedule
from .kube.api import KubeApi
from .links import handlers as links_handlers
from .mesh_gauges import MESH_GAUGES
from .metrics import METRICS, serve
from .operations import MANUAL_ROLL_ANNOTATION, PAUSE_ANNOTATION
from .reconcile import ROUTING_PLURALS, MeshReconciler, Report
from .status.events import EventPoster

log = logging.getLogger("qdmesh.operator")
G, V = contract.GROUP, contract.VERSION
_state: dict = {}


def reconciler() -> MeshReconciler:
    if "reconciler" not in _state:
        _state["reconciler"] = MeshReconciler(KubeApi(applied=owned_watch.APPLIED))
    found: MeshReconciler = _state["reconciler"]
    return found


@kopf.on.login()
def login(**kwargs: Any) -> Any:
    """In a pod: its service account; elsewhere: $KUBECONFIG as it is now (kopf's default login
    goes through the kubernetes package, which reads $KUBECONFIG once, when first imported)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # kopf's bookkeeping goes in qdmesh.io/ annotations; status stays the operator's own.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=contract.GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=contract.GROUP, key="last-handled-configuration")
    settings.persistence.finalizer = f"{contract.GROUP}/remove-from-routers"
    # kopf would post its own log lines ("Handler ... succeeded") as Events too, and retry
    # them with ERROR lines into a namespace being deleted; the operator posts its own
    # (status/events.py), which say what happened.
    settings.posting.enabled = False
    settings.execution.max_workers = 8
    # Every request of kopf's own has a deadline too: an API server that stops answering
    # (rather than refusing) must not hold a patch or a watch forever.  Watches end on the
    # server's side after server_timeout and are reopened; the client gives up a little later.
    settings.networking.connect_timeout = 10.0
    settings.networking.request_timeout = 60.0
    settings.watching.connect_timeout = 10.0
    settings.watching.server_timeout = 300  # timeoutSeconds: the API server wants an integer
    settings.watching.client_timeout = 330.0
    # The workloads and pods it watches, chosen by the API server rather than all listed and
    # filtered here (a cluster's pods are many).
    managed = f"app.kubernetes.io/managed-by={contract.MANAGER}"
    settings.watching.label_selectors["apps", "statefulsets"] = managed
    settings.watching.label_selectors["v1", "pods"] = f"{managed},qdmesh.io/mesh"
    owned_watch.configure(settings)
    load_kube_credentials()
    if SETTINGS.metrics_port:
        _state["metrics"] = await serve(SETTINGS.metrics_port)


@kopf.on.cleanup()
async def stop_metrics(**_: Any) -> None:
    schedule = _state.pop("drift", None)
    if schedule is not None:
        await schedule.stop()
    runner = _state.pop("metrics", None)
    if runner is not None:
        await runner.cleanup()


async def run(namespace: str, mesh: str | None, why: str) -> Report | None:
    """Reconcile ``mesh`` and publish what came out of it."""
    if not mesh:
        return None
    if not leader.may_reconcile():
        # Past the renew deadline: the process is about to exit (leader.py); another replica
        # may be reconciling already.
        raise kopf.TemporaryError("not holding the Lease", delay=60)
    loop = asyncio.get_running_loop()
    log.debug("reconciling %s/%s (%s)", namespace, mesh, why)
    try:
        report = await loop.run_in_executor(None, reconciler().reconcile, namespace, mesh, why)
    except Exception:
        METRICS.reconciled(why, "error", 0.0, 0, 0, 0)
        raise
    finally:
        log.debug("reconciled %s/%s (%s)", namespace, mesh, why)
    result = "ok" if not report.failures else "refused"
    METRICS.reconciled(why, result, report.seconds, report.operations, report.failures, report.repaired)
    if report.mesh_found:
        MESH_GAUGES.observe(namespace, mesh, report.statuses, report.canary)
    else:
        MESH_GAUGES.forget(namespace, mesh)
    kube = reconciler().kube
    for (plural, name), status in report.statuses.items():
        if (plural, name) in report.unchanged:
            continue
        if not leader.may_reconcile():
            raise kopf.TemporaryError("not holding the Lease", delay=60)
        await loop.run_in_executor(None, kube.patch_status, plural, namespace, name, status)
    if report.recheck_in is not None:
        _recheck(namespace, mesh, report.recheck_in)
    mesh_status = report.statuses.get((contract.MESH_PLURAL, mesh))
    if not report.mesh_found:
        _state.get("mesh_nodes", {}).pop((namespace, mesh), None)
    elif mesh_status is not None:
        nodes: dict = _state.setdefault("mesh_nodes", {})
        routers = mesh_status.get("routerStatus") or []
        nodes[(namespace, mesh)] = {r.get("node") for r in routers if r.get("node")}
    if "events" not in _state:
        _state["events"] = EventPoster(kube.core)
    poster: EventPoster = _state["events"]
    for event in report.events:
        await loop.run_in_executor(None, poster.post, event)
    return report


def _recheck(namespace: str, mesh: str, delay: float) -> None:
    """Reconcile ``mesh`` again in ``delay`` seconds (once, however often asked meanwhile)."""
    pending: set = _state.setdefault("rechecks", set())
    if (namespace, mesh) in pending:
        return
    pending.add((namespace, mesh))

    async def later() -> None:
        await asyncio.sleep(delay + 0.1)
        pending.discard((namespace, mesh))
        try:
            await run(namespace, mesh, "routers")
        except Exception as e:  # the drift check comes anyway
            log.warning("reconciling %s/%s again failed: %s", namespace, mesh, e)

    task = asyncio.get_running_loop().create_task(later())
    _state.setdefault("recheck_tasks", set()).add(task)
    task.add_done_callback(_state["recheck_tasks"].discard)


# -- RouterMesh ---------------------------------------------------------------------------------
@kopf.on.create(G, V, contract.MESH_PLURAL)
@kopf.on.update(G, V, contract.MESH_PLURAL, field="spec")
@kopf.on.resume(G, V, contract.MESH_PLURAL)
async def mesh_changed(name: str, namespace: Any, **_: Any) -> None:
    await run(namespace, name, "change")


async def mesh_drift(namespace: str, name: str) -> bool:
    """Compare every router with the desired state and repair what changed by hand; refresh
    the per-router status (peers, auto-link states) as routers come and go.  False once the
    mesh is gone (its deletion may have fallen in a gap of the watch): no more checks."""
    report = await run(namespace, name, "drift")
    return report is None or report.mesh_found


@kopf.on.event(G, V, contract.MESH_PLURAL)
async def mesh_seen(type: Any, name: str, namespace: Any, meta: Any, **_: Any) -> None:
    """Drift checks for every RouterMesh there is (drift.py: no kopf timer, so no finalizer).
    A mesh gone gets one last reconciliation: it finds no mesh, so what was kept for it (its
    management connections, last report, gauges) goes, and its routing resources say so."""
    if "drift" not in _state:
        _state["drift"] = DriftSchedule(SETTINGS.drift_interval, mesh_drift)
    schedule: DriftSchedule = _state["drift"]
    if type == "DELETED" or meta.get("deletionTimestamp"):
        schedule.forget(namespace, name)
        _state.get("mesh_operations", {}).pop((namespace, name), None)
        if type == "DELETED":
            try:
                await run(namespace, name, "change")
            except Exception as e:  # its namespace going too, the API server away: the state goes anyway
                await asyncio.get_running_loop().run_in_executor(None, reconciler().forget, namespace, name)
                MESH_GAUGES.forget(namespace, name)
                log.info("RouterMesh %s/%s gone; its routing resources' statuses not updated: %s",
                         namespace, name, e)
    else:
        schedule.watch(namespace, name)
        if _operations_changed(namespace, name, meta):
            await run(namespace, name, "change")


def _operations_changed(namespace: str, name: str, meta: Any) -> bool:
    """Whether the annotations that pause a mesh or ask for a manual roll changed since the
    last event seen (they are not in the spec, so no update handler sees them); the first
    sight of a mesh is the create or resume handler's."""
    annotations = (meta or {}).get("annotations") or {}
    now = tuple(annotations.get(key) for key in (PAUSE_ANNOTATION, MANUAL_ROLL_ANNOTATION))
    seen: dict = _state.setdefault("mesh_operations", {})
    before = seen.get((namespace, name))
    seen[(namespace, name)] = now
    return before is not None and before != now


@kopf.on.event("apps", "v1", "statefulsets", labels={"app.kubernetes.io/managed-by": contract.MANAGER})
async def routers_came_or_went(labels: Any, namespace: Any, name: Any, status: Any, type: Any,
                               **_: Any) -> None:
    """A router became ready or stopped being ready: refresh the mesh (an event handler, not a
    change handler, so kopf writes nothing onto the StatefulSet)."""
    ready = (status or {}).get("readyReplicas") or 0
    seen: dict = _state.setdefault("ready_replicas", {})
    if type == "DELETED":
        seen.pop((namespace, name), None)
        return
    if seen.get((namespace, name)) == ready:
        return
    seen[(namespace, name)] = ready
    await run(namespace, labels.get("qdmesh.io/mesh"), "routers")


def _pod_state(status: Any, spec: Any) -> tuple:
    """What of a router pod changes its mesh's status: readiness, node, and the reasons the
    scheduler and the kubelet give for it not running."""
    status, spec = status or {}, spec or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    ready = (conditions.get("Ready") or {}).get("status") == "True"
    waiting = tuple(sorted(str(((c.get("state") or {}).get("waiting") or {}).get("reason") or "")
                           for c in (status.get("containerStatuses") or [])))
    return ready, spec.get("nodeName") or "", (conditions.get("PodScheduled") or {}).get("reason"), waiting


@kopf.on.event("", "v1", "pods", labels={"app.kubernetes.io/managed-by": contract.MANAGER,
                                          "qdmesh.io/mesh": kopf.PRESENT})
@kopf.on.event("", "v1", "pods", labels={"app.kubernetes.io/managed-by": contract.MANAGER,
                                          "qdmesh.io/edge-of": kopf.PRESENT}, id="edge_pod_changed")
async def router_pod_changed(labels: Any, namespace: Any, name: Any, status: Any, spec: Any,
                             type: Any, **_: Any) -> None:
    """A router's pod became ready or not (its kubelet, or the node lifecycle controller), or
    says why it cannot run: refresh the mesh now rather than at the next drift check.  The
    StatefulSet's ready count alone misses a pod that is back while its node is not yet, and
    one that never ran.  Edge router pods too (their mesh in ``qdmesh.io/edge-of``)."""
    seen: dict = _state.setdefault("router_pods", {})
    key = (namespace, name)
    if type == "DELETED":
        seen.pop(key, None)
        return
    state = _pod_state(status, spec)
    known = key in seen
    if seen.get(key) == state:
        return
    seen[key] = state
    if known:  # the first sight of each pod (the operator starting) is the resume handler's
        await run(namespace, labels.get("qdmesh.io/mesh") or labels.get("qdmesh.io/edge-of"), "routers")


@kopf.on.event("", "v1", "nodes")
async def node_came_or_went(name: Any, status: Any, type: Any, **_: Any) -> None:
    """A node that router pods run on turned ready or not: refresh those meshes now (the
    pods' own readiness may have changed before, or not at all)."""
    conditions = (status or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    seen: dict = _state.setdefault("node_ready", {})
    if type == "DELETED":
        seen.pop(name, None)
        return
    before = seen.get(name)
    seen[name] = ready
    if before is None or before == ready:
        return
    meshes = sorted(key for key, nodes in _state.get("mesh_nodes", {}).items() if name in nodes)
    for namespace, mesh in meshes:
        await run(namespace, mesh, "routers")


@kopf.on.event("apps", "v1", "deployments", labels={"qdmesh.io/edge-of": kopf.PRESENT})
@kopf.on.event("apps", "v1", "daemonsets", labels={"qdmesh.io/edge-of": kopf.PRESENT})
async def edges_came_or_went(labels: Any, namespace: Any, name: Any, status: Any, type: Any,
                             **_: Any) -> None:
    """An edge router became ready or went: manage it and refresh the mesh's edge status."""
    status = status or {}
    ready = status.get("readyReplicas", status.get("numberReady")) or 0
    seen: dict = _state.setdefault("ready_edges", {})
    if type == "DELETED":
        seen.pop((namespace, name), None)
        return
    if seen.get((namespace, name)) == ready:
        return
    seen[(namespace, name)] = ready
    await run(namespace, labels.get("qdmesh.io/edge-of"), "routers")


# -- LinkRoute, AutoLink, VhostPolicy -----------------------------------------------------------
def _register(plural: str) -> None:
    @kopf.on.create(G, V, plural, id=f"{plural}-create")
    @kopf.on.update(G, V, plural, field="spec", id=f"{plural}-update")
    @kopf.on.resume(G, V, plural, id=f"{plural}-resume")
    async def routing_changed(spec: Any, namespace: Any, **_: Any) -> None:
        await run(namespace, spec.get("meshRef"), "change")

    @kopf.on.delete(G, V, plural, id=f"{plural}-delete")
    async def routing_deleted(spec: Any, namespace: Any, **_: Any) -> None:
        # The object still exists (held by kopf's finalizer) but is marked for deletion:
        # the reconciler leaves it out, so its entities leave every router before it goes.
        await run(namespace, spec.get("meshRef"), "change")


for _plural in ROUTING_PLURALS.values():
    _register(_plural)

# -- MeshLink -----------------------------------------------------------------------------------
links_handlers.register(run, lambda: reconciler().kube)

# -- MeshAccessGrant and the redemption server (grants/handlers.py) --------------------------------
from .grants import handlers as _grants  # noqa: E402,F401  (registers them)
