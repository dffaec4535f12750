"""A change that needs new router pods (here a pod annotation in ``spec.pod``) rolls the shared
mesh one router at a time, highest first, each waiting until the mesh has reconverged: never
more than one router down, every pod replaced exactly once, a ``RollingRestart`` Event per step,
and messages still cross the mesh afterwards."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Dict, List

from .kube import eventually, pod_ready
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole
from .product import patch_resource, port_forwards, read_resource, router_pods, status_summary
from .traffic import cross_mesh


def _ready_routers(core: Any, namespace: str, names: List[str]) -> Dict[str, bool]:
    ready = {}
    for name in names:
        try:
            ready[name] = pod_ready(core, namespace, name)
        except Exception:  # the pod is being replaced: not there for a moment
            ready[name] = False
    return ready


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
    history: List[str] = []

    def rolled() -> bool:
        nonlocal most_down
        pods = router_pods(k8s, ns, MESH)
        for name in names:
            pod = pods.get(name)
            if pod is not None and pod.uid != before[name] and name not in replaced_order:
                replaced_order.append(name)
        ready = _ready_routers(core, ns, names)
        down = sum(1 for name in names if not ready[name] or name not in pods)
        most_down = max(most_down, down)
        return len(replaced_order) == len(names) and mesh_whole(k8s, ns, len(names), history, started)

    eventually(rolled, 420, "every router replaced and the mesh whole again", interval=0.5,
               describe=lambda: f"replaced {replaced_order}; most down at once {most_down}\n"
               + status_summary(read_resource(k8s, ns, "routermeshes", MESH)) + "\n" + "\n".join(history))
    took = time.monotonic() - started
    print(f"rolling restart: order {replaced_order}, at most {most_down} router(s) down at once")
    assert replaced_order == sorted(names, reverse=True), "highest router first, one at a time"
    assert most_down <= 1, f"{most_down} routers were down at once"
    after = router_pods(k8s, ns, MESH)
    assert all(after[name].uid != before[name] for name in names)
    events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={MESH}").items
    rolling = [e for e in events if e.reason == "RollingRestart"]
    assert rolling, [(e.reason, e.message) for e in events]
    timing(f"pod settings changed -> all {len(names)} routers rolled, mesh Ready and converged", took)
    mesh.pods = after
    with port_forwards(e2e_kubeconfig, ns, [names[0], names[-1]]) as urls:
        cross_mesh(urls, names[0], names[-1], 20)
