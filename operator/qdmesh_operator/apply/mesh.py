"""The apply stage of a reconciliation: the rendered objects through server-side apply, the
desired entities on every ready router through AMQP management, then the StatefulSet with the
rolling-restart partition that what the routers reported allows; routers load renewed TLS
material at run time (tls_reload.py).  Raises KubeRefused naming
the kind of object the API server refused."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from kubernetes.client.rest import ApiException

from .. import contract
from ..contract import ROUTER_UNREACHABLE
from ..desired.state import MeshState
from ..kube.api import KubeApi, KubeRefused
from ..model.restart import restart_sections
from ..observe.cluster import Observed
from ..operations import MANUAL_ROLL_ANNOTATION, in_any_window
from ..operations.reasons import roll_reasons
from ..render.mesh import RenderedMesh
from ..rolling import PENDING, PENDING_ANNOTATION, TEMPLATE_HASH, next_partition
from ..tls.resolve import Certificates
from .addresses import ConsumedAddresses, count_consumed
from .converged import mesh_converged
from .edges import EdgeRouter, apply_edge_objects, edge_routers, sync_edges
from .link_access import remove_unwanted as remove_unwanted_link_objects
from .management import ClientPool, RouterOutcome, sync_mesh
from .tls_reload import TlsReload, reload_routers, replace_edge_connections, replace_old_connections


@dataclass
class Applied:
    #: What each ready interior router's management did and reported, by router id.
    outcomes: Dict[str, RouterOutcome] = field(default_factory=dict)
    #: The live StatefulSet's status, as read at the start.
    stateful_set_status: Dict[str, Any] = field(default_factory=dict)
    #: The rolling restart in words; empty when nothing rolls.
    rolling: str = ""
    #: Events to post as (type, reason, message).
    events: List[Tuple[str, str, str]] = field(default_factory=list)
    #: The edge routers managed this time, and what each one's management did and reported.
    edge_routers: List[EdgeRouter] = field(default_factory=list)
    edge_outcomes: Dict[str, RouterOutcome] = field(default_factory=dict)
    #: What TLS material each router that answered runs after this time, interior and edge.
    tls: Dict[str, TlsReload] = field(default_factory=dict)
    edge_tls: Dict[str, TlsReload] = field(default_factory=dict)
    #: How many addresses have a consumer in the mesh (None: no router answered).
    consumed: ConsumedAddresses | None = None
    #: Why the pod template changed this time (operations/reasons.py); empty when it did not.
    roll_reasons: List[str] = field(default_factory=list)
    #: Edge groups whose pod template change waits for a maintenance window (edge_rollout.py).
    edge_pending: List[str] = field(default_factory=list)


def _apply(kube: KubeApi, obj: Mapping[str, Any]) -> None:
    try:
        kube.apply(obj)
    except ApiException as e:
        raise KubeRefused(str(obj["kind"]), e) from None


def apply_mesh(kube: KubeApi, *, pool: ClientPool, rendered: RenderedMesh, state: MeshState,
               observed: Observed, urls: Mapping[str, str], certificates: Certificates,
               override: Mapping[str, str] | None = None, manual_roll: bool = False) -> Applied:
    """``manual_roll``: the mesh asks for a manual rolling update; once the StatefulSet with
    its restamped pod template is applied, the annotation is removed (within this mesh's
    reconciliation, so the next one cannot see it and restamp the template again)."""
    mesh = state.mesh
    applied = Applied(stateful_set_status=dict((observed.stateful_set or {}).get("status") or {}))
    for obj in rendered.objects:
        _apply(kube, obj)
    if not mesh.console.enabled:
        try:
            removed = kube.delete_console(mesh.namespace, mesh.name)
        except ApiException as e:
            raise KubeRefused("Deployment", e) from None
        if removed:
            applied.events.append(("Normal", "ConsoleRemoved", f"web console {contract.console(mesh.name)} "
                                   "removed (spec.console.enabled is false)"))
    applied.events.extend(remove_unwanted_link_objects(kube, mesh, observed.stateful_set))
    applied.edge_routers = edge_routers(state, observed.edge_pods, mesh.inter_router_tls.enabled, override)
    if certificates.management_error is not None:
        applied.events.append(("Warning", ROUTER_UNREACHABLE, certificates.management_error))
    elif urls:
        applied.outcomes = sync_mesh(state, urls, pool=pool, tls=certificates.management)
        applied.tls = reload_routers(applied.outcomes, certificates.profiles, pool=pool,
                                     tls=certificates.management)
        replace_old_connections(applied.tls, applied.outcomes, certificates.profiles, mesh.size, pool=pool,
                                tls=certificates.management)
        if applied.outcomes:
            applied.consumed = count_consumed(applied.outcomes, pool=pool, tls=certificates.management)
    sts = rendered.stateful_set
    live = observed.stateful_set
    new_hash = sts["metadata"]["annotations"][TEMPLATE_HASH]
    live_hash = (((live or {}).get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_HASH)
    if live is not None and live_hash != new_hash:
        last = ((observed.body or {}).get("status") or {}).get("restartSections")
        applied.roll_reasons = roll_reasons((live.get("spec") or {}).get("template"), sts["spec"]["template"],
                                            previous_sections=last, sections=restart_sections(mesh))
    window_open = in_any_window(mesh.maintenance_windows, dt.datetime.now(dt.timezone.utc))
    partition, applied.rolling = next_partition(
        mesh.size, new_hash, live=live, pods=list(observed.pods.values()),
        converged=mesh_converged(mesh, applied.outcomes), window_open=window_open)
    sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = partition
    if applied.rolling == PENDING:  # applied without it once the roll starts: removed then
        sts["metadata"]["annotations"][PENDING_ANNOTATION] = "true"
    _apply(kube, sts)
    if manual_roll:
        try:
            kube.remove_annotations(contract.MESH_PLURAL, mesh.namespace, mesh.name, [MANUAL_ROLL_ANNOTATION])
        except ApiException as e:
            raise KubeRefused("RouterMesh", e) from None
    # Edge groups after the interior routers they connect to.
    edge_events, applied.edge_pending = apply_edge_objects(kube, state, rendered.edge_objects,
                                                           observed.edge_workloads, window_open)
    applied.events.extend(edge_events)
    if certificates.management_error is None and applied.edge_routers:
        applied.edge_outcomes = sync_edges(state, applied.edge_routers, pool, certificates.management)
        applied.edge_tls = reload_routers(applied.edge_outcomes, certificates.edge_profiles, pool=pool,
                                          tls=certificates.management, verify_name=False)
        interior_current = len(applied.tls) >= mesh.size and all(r.current for r in applied.tls.values())
        replace_edge_connections(applied.edge_tls, applied.edge_outcomes, certificates.edge_profiles,
                                 interior_current=interior_current, pool=pool, tls=certificates.management,
                                 verify_name=False)
    return applied
