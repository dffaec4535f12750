"""Nodes lost and drained, on a cluster where at least two nodes take pods (kind;
skipped on the single-node local cluster).  One RouterMesh of 4 spread over the nodes (2 + 2 on
two workers) with a per-node edge group, in this order:

1. the per-node edge group has one edge router on each node that takes pods, each connected;
2. a worker is stopped (``docker stop`` of its kind container: the machine switched off) while
   unsettled messages flow from a router on another node to a receiver there and one on the
   stopped node: every message gets an outcome, none accepted is lost, and messages sent once
   the operator reports the loss all reach the receiver that stayed; the RouterMesh's status
   (lostRouters, Degraded, Ready=False/RoutersLost, readyRouters) and a RoutersLost Event name
   the lost routers.  After ``docker start`` the pods come back, a RoutersBack Event, and the
   mesh is Ready and converged.  The stopped worker is one the operator does not run on (its
   replacement elsewhere takes the Lease first; the chart's nodeLossTolerationSeconds);
3. ``kubectl drain`` of a worker with traffic from a router on another node, balanced over a
   consumer there and one on a router of the drained node: the PodDisruptionBudget
   (maxUnavailable 1) refuses the second router's eviction until the first is back, never
   more than one router is down, and every message is accepted (the evicted router drains:
   it settles what it holds before it stops); uncordoned, the mesh is Ready and converged."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from .edge_support import router_supports_edge_mode
from .kube import describe_namespace, eventually
from .mesh_fixtures import Timing, fresh_namespace, mesh_whole
from .nodes import docker_node, kubectl, mesh_events, need_nodes, node_of, node_ready, pods_by_node, spread
from .product import create_resource, port_forwards, read_resource, status_summary
from .traffic import Traffic, cross_mesh

NAME = "nodal"
SIZE = 4
ROUTERS = f"qdmesh.io/mesh={NAME}"
OUTCOMES = {"accepted", "released", "modified"}


class Nodal:
    def __init__(self, namespace: str, nodes: List[str], edges: bool) -> None:
        self.namespace, self.nodes, self.edges = namespace, nodes, edges


def whole(k8s: Any, nodal: Nodal) -> bool:
    """Ready and converged with every router ready, and every edge router connected."""
    if not mesh_whole(k8s, nodal.namespace, SIZE, name=NAME):
        return False
    status = read_resource(k8s, nodal.namespace, "routermeshes", NAME).get("status") or {}
    edges = int(status.get("edges") or 0)
    return not nodal.edges or (edges >= 1 and status.get("readyEdges") == edges)


def lost_with_the_node(k8s: Any, namespace: str, lost: List[str], node: str) -> bool:
    found = read_resource(k8s, namespace, "routermeshes", NAME)["status"].get("lostRouters") or []
    return {r["name"]: (r["node"], r["reason"]) for r in found} == {r: (node, "NodeNotReady") for r in lost}


def describe(k8s: Any, core: Any, namespace: str) -> str:
    obj = read_resource(k8s, namespace, "routermeshes", NAME)
    status = obj.get("status") or {}
    return (f"{status_summary(obj)}\nreadyRouters={status.get('readyRouters')} "
            f"lostRouters={status.get('lostRouters')}\n{describe_namespace(core, namespace)}")


@pytest.fixture(scope="module")
def nodal(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[Nodal]:
    nodes = need_nodes(core)
    edges, why = router_supports_edge_mode()
    if not edges:
        print(f"no per-node edge group: {why}")
    namespace = fresh_namespace(core, "nodes")
    spec: Dict[str, Any] = {"size": SIZE,
                            "pod": {"topologySpreadConstraints": [spread("qdmesh.io/mesh", NAME)]}}
    if edges:
        spec["edgeGroups"] = [{"name": "node", "perNode": True}]
    create_resource(k8s, namespace, "routermeshes", "RouterMesh", NAME, spec)
    state = Nodal(namespace, nodes, edges)
    try:
        took = eventually(lambda: whole(k8s, state), 300, f"RouterMesh of {SIZE} on {len(nodes)} nodes Ready",
                          interval=1.0, describe=lambda: describe(k8s, core, namespace))
        timing(f"RouterMesh of {SIZE} (+ per-node edges) on {len(nodes)} nodes -> Ready and converged", took)
        yield state
    finally:
        core.delete_namespace(namespace, propagation_policy="Background")


def test_per_node_edge_group_has_one_edge_router_on_each_node(nodal: Nodal, k8s: Any) -> None:
    if not nodal.edges:
        pytest.skip("needs the router's edge mode (edge_support.py)")
    groups = (read_resource(k8s, nodal.namespace, "routermeshes", NAME).get("status") or {}).get("edgeGroups")
    group = {g["name"]: g for g in groups or []}["node"]
    placed = sorted(r.get("node") for r in group["routers"])
    assert group["kind"] == "DaemonSet"
    assert placed == nodal.nodes, f"edge routers on {placed}, nodes that take pods: {nodal.nodes}"
    assert all(r["ready"] and r.get("interior") for r in group["routers"]), group["routers"]


def test_worker_stopped_with_traffic(nodal: Nodal, operator_namespace: str, core: Any, k8s: Any,
                                     e2e_kubeconfig: Path, timing: Timing) -> None:
    ns = nodal.namespace
    operator_node = node_of(core, operator_namespace, "app.kubernetes.io/component=operator")
    placed = pods_by_node(core, ns, ROUTERS)
    victim = next(n for n in nodal.nodes if n != operator_node and placed.get(n))
    lost = placed[victim]
    staying = sorted(p for n, pods in placed.items() if n != victim for p in pods)
    assert len(staying) >= 2, f"routers per node: {placed}"
    source, sink = staying[0], staying[1]
    print(f"routers per node {placed}; the operator on {operator_node}; stopping {victim}")
    with port_forwards(e2e_kubeconfig, ns, [source, sink, lost[0]]) as urls:
        traffic = Traffic(urls, source, [sink, lost[0]], stem="node-loss")
        stopped = 0.0
        try:
            for _ in range(10):
                traffic.batch("before")
            docker_node("stop", victim)
            stopped = time.monotonic()

            def reported() -> bool:
                status = read_resource(k8s, ns, "routermeshes", NAME).get("status") or {}
                return sorted(r["name"] for r in status.get("lostRouters") or []) == lost

            traffic.until(reported, 240, f"status naming {lost} lost", "during")
            timing(f"worker stopped -> RouterMesh status names its {len(lost)} routers lost",
                   time.monotonic() - stopped)
            for _ in range(10):
                traffic.batch("after")
            counts, unreceived = traffic.settle_all(120)
            after = traffic.outcomes("after")
            # The operator says so first when their management stops answering (seconds), then
            # names their node once the node lifecycle controller marks it (~40 s): before the
            # node comes back.
            eventually(lambda: lost_with_the_node(k8s, ns, lost, victim), 180,
                       f"status naming {lost} lost with their node {victim}",
                       describe=lambda: describe(k8s, core, ns))
            timing("worker stopped -> status names its routers lost with the node (NodeNotReady)",
                   time.monotonic() - stopped)
            status = read_resource(k8s, ns, "routermeshes", NAME)["status"]
        finally:
            try:
                traffic.close()
            finally:  # the node comes back whatever happened above
                if stopped:
                    docker_node("start", victim)
    restarted = time.monotonic()
    print(f"node-loss traffic: {len(traffic.sent)} messages, outcomes {counts}, received at {sink}: "
          f"{len(traffic.received(sink))}, at {lost[0]}: {len(traffic.received(lost[0]))}")
    assert set(counts) <= OUTCOMES, counts
    assert sum(counts.values()) == len(traffic.sent)
    assert unreceived == [], f"accepted but never received: {unreceived[:5]}"
    assert set(after) == {"accepted"}, f"messages sent once the loss was reported: {after}"
    assert set(traffic.received(sink)) >= {b for b in traffic.sent.values() if b.startswith("after-")}

    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "RoutersLost")
    assert conditions["Degraded"]["status"] == "True"
    assert all(r in conditions["Degraded"]["message"] for r in lost), conditions["Degraded"]
    assert status["readyRouters"] <= SIZE - len(lost)
    assert {r["name"] for r in status["routerStatus"] if r["ready"]} <= set(staying), status["routerStatus"]
    warnings = mesh_events(core, ns, NAME, "RoutersLost")
    assert any(all(r in m for r in lost) for m in warnings), warnings

    eventually(lambda: node_ready(core, victim), 120, f"{victim} Ready again")
    took = eventually(lambda: whole(k8s, nodal), 300, "RouterMesh Ready and converged after the node "
                      "returned", interval=1.0, describe=lambda: describe(k8s, core, ns))
    timing("stopped worker started -> RouterMesh Ready and converged", time.monotonic() - restarted)
    print(f"node back -> mesh whole in {took:.1f} s")
    status = read_resource(k8s, ns, "routermeshes", NAME)["status"]
    assert status["lostRouters"] == []
    assert {c["type"]: c["status"] for c in status["conditions"]}["Degraded"] == "False"
    back = mesh_events(core, ns, NAME, "RoutersBack")
    # Routers come back one by one (each pod Ready in its own time): each is named in one.
    assert all(any(r in m for m in back) for r in lost), back
    assert pods_by_node(core, ns, ROUTERS) == placed, "the routers did not come back on their node"
    with port_forwards(e2e_kubeconfig, ns, [lost[0], source]) as urls:
        cross_mesh(urls, lost[0], source, 10)


def test_drain_held_by_the_disruption_budget_with_traffic(nodal: Nodal, core: Any, k8s: Any,
                                                         e2e_kubeconfig: Path, timing: Timing) -> None:
    ns = nodal.namespace
    eventually(lambda: whole(k8s, nodal), 300, "RouterMesh Ready and converged before the drain",
               interval=1.0, describe=lambda: describe(k8s, core, ns))
    placed = pods_by_node(core, ns, ROUTERS)
    drained = max(nodal.nodes, key=lambda n: len(placed.get(n, [])))
    going = placed[drained]
    staying = sorted(p for n, pods in placed.items() if n != drained for p in pods)
    assert len(going) >= 2 and len(staying) >= 2, f"routers per node: {placed}"
    down_at_once: List[int] = []
    # Balanced over a consumer on a router that stays and one on a router the drain stops: that
    # router drains (SIGTERM) while it holds deliveries for its consumer.
    with port_forwards(e2e_kubeconfig, ns, [*staying[:2], going[0]]) as urls:
        traffic = Traffic(urls, staying[0], [staying[1], going[0]], stem="drain")
        started = time.monotonic()
        drain = kubectl(e2e_kubeconfig, "drain", drained, "--ignore-daemonsets", "--delete-emptydir-data",
                        "--timeout=240s")
        try:
            while drain.poll() is None:
                assert time.monotonic() - started < 270, "kubectl drain did not finish"
                traffic.batch("drain")
                pods = core.list_namespaced_pod(ns, label_selector=ROUTERS).items
                ready = [p for p in pods if not p.metadata.deletion_timestamp and
                         any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]
                down_at_once.append(SIZE - len(ready))
            output = drain.stdout.read() if drain.stdout else ""
            drained_in = time.monotonic() - started
            counts, unreceived = traffic.settle_all()
        finally:
            traffic.close()
            kubectl(e2e_kubeconfig, "uncordon", drained).wait(60)
    print(f"drain of {drained} ({going}) in {drained_in:.1f} s; routers down at once: {down_at_once}; "
          f"traffic {len(traffic.sent)} messages, outcomes {counts}\n{output}")
    assert drain.returncode == 0, output
    timing(f"kubectl drain of a worker with {len(going)} routers (traffic flowing)", drained_in)
    # Nothing released or modified for the producer on a router that stays, though its
    # deliveries went to the drained router's consumer too.
    assert counts == {"accepted": len(traffic.sent)}, counts
    assert unreceived == []
    assert traffic.received(going[0]), f"no message reached the consumer on {going[0]}"
    assert max(down_at_once) <= 1, f"more than one router down at once: {down_at_once}"
    # The budget is what kept the second router: drain retried its eviction.
    assert "disruption budget" in output, output
    assert not pods_by_node(core, ns, ROUTERS).get(drained), "a router is still on the drained node"
    eventually(lambda: whole(k8s, nodal), 300, "RouterMesh Ready and converged after the drain", interval=1.0,
               describe=lambda: describe(k8s, core, ns))
