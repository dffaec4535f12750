"""A change that needs new router pods (here a pod annotation in ``spec.pod``) rolls the shared
mesh, highest router first: every pod replaced exactly once, in order, ``RollingRestart``
Events, never two routers in replacement at once, and afterwards the mesh is whole and
messages cross it."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

from .kube import eventually
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole
from .product import patch_resource, port_forwards, read_resource, router_pods, status_summary
from .traffic import cross_mesh


def _roll_state(core: Any, namespace: str, names: List[str],
                before: Dict[str, str]) -> Tuple[List[str], List[str]]:
    """From one listing of the router pods: (routers the roll has taken down and not yet
    brought back: pod missing, terminating, or replaced and not Ready yet; routers not being
    replaced that are not Ready, which is not the roll's doing and is reported separately)."""
    pods = {p.metadata.name: p for p in
            core.list_namespaced_pod(namespace, label_selector=f"qdmesh.io/mesh={MESH}").items}
    in_replacement: List[str] = []
    unready_untouched: List[str] = []
    for name in names:
        pod = pods.get(name)
        if pod is None or pod.metadata.deletion_timestamp is not None:
            in_replacement.append(name)
        elif not _ready(pod):
            (in_replacement if pod.metadata.uid != before[name] else unready_untouched).append(name)
    return in_replacement, unready_untouched


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def test_pod_settings_change_rolls_routers_one_at_a_time(
        mesh: MeshState, core: Any, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    ns = mesh.namespace
    names = mesh.routers
    before = {name: pod.uid for name, pod in router_pods(k8s, ns, MESH).items()}
    assert set(before) == set(names), before
    started = time.monotonic()
    patch_resource(k8s, ns, "routermeshes", MESH,
                   {"spec": {"pod": {"annotations": {"e2e.qdmesh.io/roll": uuid.uuid4().hex[:8]}}}})
    replaced_order: List[str] = []
    most_down = 0
    flapped: Set[str] = set()
    history: List[str] = []

    def rolled() -> bool:
        nonlocal most_down
        pods = router_pods(k8s, ns, MESH)
        for name in names:
            pod = pods.get(name)
            if pod is not None and pod.uid != before[name] and name not in replaced_order:
                replaced_order.append(name)
        in_replacement, unready_untouched = _roll_state(core, ns, names, before)
        most_down = max(most_down, len(in_replacement))
        flapped.update(unready_untouched)
        return len(replaced_order) == len(names) and mesh_whole(k8s, ns, len(names), history, started)

    eventually(rolled, 420, "every router replaced and the mesh whole again", interval=0.5,
               describe=lambda: f"replaced {replaced_order}; most down at once {most_down}\n"
               + status_summary(read_resource(k8s, ns, "routermeshes", MESH)) + "\n" + "\n".join(history))
    took = time.monotonic() - started
    print(f"rolling restart: order {replaced_order}, at most {most_down} router(s) in replacement at once;"
          f" not Ready for a moment while not being replaced: {sorted(flapped) or 'none'}")
    assert replaced_order == sorted(names, reverse=True), "highest router first"
    # Two at once happened when the next router was released while a replaced router reached
    # the others only through it (its own links still coming back): the operator now waits
    # for every inter-router link of the topology (reconcile.mesh_converged).
    assert most_down <= 1, f"{most_down} routers were in replacement at once"
    after = router_pods(k8s, ns, MESH)
    assert all(after[name].uid != before[name] for name in names)
    events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={MESH}").items
    rolling = [e for e in events if e.reason == "RollingRestart"]
    assert rolling, [(e.reason, e.message) for e in events]
    timing(f"pod settings changed -> all {len(names)} routers rolled, mesh Ready and converged", took)
    mesh.pods = after
    with port_forwards(e2e_kubeconfig, ns, [names[0], names[-1]]) as urls:
        cross_mesh(urls, names[0], names[-1], 20)
