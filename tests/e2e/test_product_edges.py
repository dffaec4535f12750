"""Edge routers on the real cluster: a RouterMesh of 3 interior routers with an edge
group of 3 (a Deployment) and a per-node group (a DaemonSet).  Clients on two different edge
routers exchange unsettled messages through the interior; the interior router one of them is
connected to is deleted mid-traffic, the edges fail over and every message gets an outcome;
the edge group scales 3 -> 6 -> 3 with traffic flowing and nothing accepted is lost.

Needs the router's edge mode: skipped, saying why, while the router in the images refuses
``mode: edge`` (edge_support.py probes the router package the images are built from; the
needs_edge_mode fixture below)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from .edge_support import router_supports_edge_mode
from .kube import describe_namespace, eventually
from .mesh_fixtures import Timing, fresh_namespace
from .product import (
    core_api,
    create_resource,
    is_true,
    patch_resource,
    port_forwards,
    read_resource,
    status_summary,
)
from .traffic import Traffic


@pytest.fixture(scope="session", autouse=True)
def needs_edge_mode() -> None:
    """The skip condition: the router of the images runs edge routers.  A session fixture, so
    it is decided before the chart is installed, and only when the e2e suite runs (the probe
    starts a router for a few seconds)."""
    supported, why = router_supports_edge_mode()
    if not supported:
        pytest.skip(f"needs the router's edge mode: {why}")

EDGY = "edgy"
GROUP = "apps"
SPEC: Dict[str, Any] = {"size": 3, "edgeGroups": [{"name": GROUP, "size": 3},
                                                   {"name": "nodes", "perNode": True}]}


def edge_status(k8s: Any, namespace: str) -> Dict[str, Dict[str, Any]]:
    """status.edgeGroups by group name."""
    status = read_resource(k8s, namespace, "routermeshes", EDGY).get("status") or {}
    return {g["name"]: g for g in status.get("edgeGroups") or []}


def edges_whole(k8s: Any, namespace: str, size: int) -> bool:
    """Ready, and the group has ``size`` edge routers, each connected to an interior router,
    and every other group has all its routers connected."""
    obj = read_resource(k8s, namespace, "routermeshes", EDGY)
    groups = edge_status(k8s, namespace)
    apps = groups.get(GROUP) or {}
    return bool(is_true(obj, "Ready") and apps.get("edges") == size and apps.get("readyEdges") == size
                and len(apps.get("routers") or []) == size
                and all(g.get("readyEdges") == g.get("edges") for g in groups.values()))


def uplinks(k8s: Any, namespace: str, group: str = GROUP) -> Dict[str, str]:
    """Edge router pod -> the interior router it is connected to."""
    return {r["name"]: r.get("interior", "") for r in edge_status(k8s, namespace)[group]["routers"]}


@pytest.fixture(scope="module")
def edgy(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[str]:
    namespace = fresh_namespace(core, "edges")
    started = time.monotonic()
    create_resource(k8s, namespace, "routermeshes", "RouterMesh", EDGY, SPEC)
    try:
        eventually(lambda: edges_whole(k8s, namespace, 3), 300, "RouterMesh with edge groups Ready, every "
                   "edge router connected", interval=1.0,
                   describe=lambda: status_summary(read_resource(k8s, namespace, "routermeshes", EDGY)) +
                   f"\n{edge_status(k8s, namespace)}\n" + describe_namespace(core, namespace))
        timing("RouterMesh of 3 + edge groups created -> every edge router connected",
               time.monotonic() - started)
        yield namespace
    finally:
        core.delete_namespace(namespace, propagation_policy="Background")


def test_clients_on_two_edge_routers_exchange_unsettled_messages(edgy: str, k8s: Any,
                                                                 e2e_kubeconfig: Path) -> None:
    edges = sorted(uplinks(k8s, edgy))
    assert len(edges) == 3 and all(uplinks(k8s, edgy).values())
    nodes = edge_status(k8s, edgy)["nodes"]
    assert nodes["kind"] == "DaemonSet" and nodes["edges"] >= 1 and nodes["readyEdges"] == nodes["edges"]
    placed = [r.get("node") for r in nodes["routers"]]
    assert all(placed) and len(set(placed)) == len(placed), f"not one edge router per node: {placed}"
    with port_forwards(e2e_kubeconfig, edgy, edges[:2]) as urls:
        traffic = Traffic(urls, edges[0], edges[1])
        try:
            for _ in range(10):
                traffic.batch("plain")
            counts, lost = traffic.settle_all()
        finally:
            traffic.close()
    assert counts == {"accepted": 50}, counts
    assert lost == []


def test_interior_router_deleted_mid_traffic_edges_fail_over(edgy: str, k8s: Any, e2e_kubeconfig: Path,
                                                              timing: Timing) -> None:
    before = uplinks(k8s, edgy)
    source, sink = sorted(before)[:2]
    victim = before[source]
    assert victim, f"{source} reports no interior router"
    with port_forwards(e2e_kubeconfig, edgy, [source, sink]) as urls:
        traffic = Traffic(urls, source, sink)
        try:
            for _ in range(10):
                traffic.batch("before")
            core_api(k8s).delete_namespaced_pod(victim, edgy, grace_period_seconds=0)
            deleted = time.monotonic()
            # Both ends fail over: the sink's edge router may have been on the victim too.
            traffic.until(lambda: all(uplinks(k8s, edgy).get(e) not in ("", victim) for e in (source, sink)),
                          120, f"{source} and {sink} connected to interior routers other than {victim}",
                          "during")
            timing(f"interior router deleted -> {source} failed over", time.monotonic() - deleted)
            for _ in range(10):
                traffic.batch("after")
            counts, lost = traffic.settle_all()
            after = [o.name for t, o in traffic.sender.outcomes.items()
                     if traffic.sent[t].startswith("after-")]
        finally:
            traffic.close()
    print(f"fail-over traffic: {len(traffic.sent)} messages, outcomes {counts}")
    assert set(counts) <= {"accepted", "released", "modified"}, counts
    assert sum(counts.values()) == len(traffic.sent)
    assert lost == [], f"accepted but never received: {lost[:5]}"
    assert set(after) == {"accepted"}, "messages sent after the fail-over were not all accepted"
    eventually(lambda: edges_whole(k8s, edgy, 3), 300, "mesh Ready again, every edge router connected",
               interval=1.0, describe=lambda: str(edge_status(k8s, edgy)))


def test_edge_group_scales_3_6_3_with_traffic(edgy: str, k8s: Any, e2e_kubeconfig: Path,
                                             timing: Timing) -> None:
    source, sink = sorted(uplinks(k8s, edgy))[:2]
    with port_forwards(e2e_kubeconfig, edgy, [source, sink]) as urls:
        traffic = Traffic(urls, source, sink)
        try:
            for size in (6, 3):
                started = time.monotonic()
                patch_resource(k8s, edgy, "routermeshes", EDGY,
                               {"spec": {"edgeGroups": [{"name": GROUP, "size": size},
                                                        {"name": "nodes", "perNode": True}]}})
                traffic.until(lambda n=size: edges_whole(k8s, edgy, n), 300,  # type: ignore[misc]
                              f"edge group scaled to {size}, every edge router connected", f"to{size}")
                timing(f"edge group scaled to {size} -> every edge router connected (traffic flowing)",
                       time.monotonic() - started)
            for _ in range(5):
                traffic.batch("settled")
            counts, lost = traffic.settle_all()
        finally:
            traffic.close()
    print(f"scale traffic: {len(traffic.sent)} messages, outcomes {counts}")
    assert counts == {"accepted": len(traffic.sent)}, \
        f"scaling the edge group lost or bounced messages: {counts}"
    assert lost == []
