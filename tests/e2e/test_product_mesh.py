"""The whole product on a real cluster: the Helm chart from this checkout installs the operator,
a 3-router RouterMesh becomes Ready, messages cross it through ``kubectl port-forward``, a
LinkRoute goes live on every router without restarting any, ``kubectl qdstat`` reads the mesh,
and the mesh recovers from a router pod deleted mid-traffic.

The operator and the mesh are session fixtures (mesh_fixtures.py) shared with the other
``test_product_*`` files, which run after this one in file order; each later test relies on the
earlier ones having passed (it fails early with the reason if not).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any, List

import pytest
from kubernetes import client

from tests.router.amqpclient import Net, msg, send_and_settle

from .kube import eventually
from .mesh_fixtures import MESH, SIZE, MeshState, Timing, mesh_whole
from .product import (
    apps_api,
    create_resource,
    is_true,
    kubectl_binary,
    package_version,
    port_forwards,
    read_resource,
    router_pods,
    run,
    status_summary,
)
from .traffic import cross_mesh, entity_rows, inter_router_peers, link_routes, router_ids_known

ROUTERS = [f"{MESH}-{i}" for i in range(SIZE)]


def test_chart_installs_operator(operator_namespace: str, k8s: Any) -> None:
    dep = apps_api(k8s).read_namespaced_deployment("qdmesh", operator_namespace)
    container = dep.spec.template.spec.containers[0]
    assert container.image == f"qdmesh/operator:{package_version()}"
    assert container.image_pull_policy == "Never"
    assert dep.status.ready_replicas == 1
    # The chart's default leader election: the operator's pod holds the Lease in its namespace.
    [pod] = [p for p in client.CoreV1Api(k8s).list_namespaced_pod(
        operator_namespace, label_selector="app.kubernetes.io/name=qdmesh-operator").items
        if p.metadata.deletion_timestamp is None]

    def lease_holder() -> str:
        try:
            lease = client.CoordinationV1Api(k8s).read_namespaced_lease("qdmesh-operator", operator_namespace)
        except client.ApiException as e:
            if e.status == 404:
                return ""
            raise
        return str(lease.spec.holder_identity or "")

    eventually(lambda: lease_holder() == pod.metadata.name, 60, "the operator's pod holding its Lease",
               describe=lambda: f"holder: {lease_holder()!r}, pod: {pod.metadata.name}")


def test_mesh_becomes_ready(mesh: MeshState, k8s: Any) -> None:
    obj = read_resource(k8s, mesh.namespace, "routermeshes", MESH)
    status = obj["status"]
    assert status["readyRouters"] == SIZE, status_summary(obj)
    assert sorted(r["name"] for r in status["routerStatus"]) == ROUTERS
    assert all(r["ready"] for r in status["routerStatus"]), status["routerStatus"]
    assert sorted(mesh.pods) == ROUTERS
    sts = apps_api(k8s).read_namespaced_stateful_set(MESH, mesh.namespace)
    assert sts.spec.template.spec.containers[0].image == f"qdmesh/router:{package_version()}"


def test_messages_cross_the_mesh(mesh: MeshState, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    with port_forwards(e2e_kubeconfig, mesh.namespace, [ROUTERS[0], ROUTERS[2]]) as urls:
        started = time.monotonic()
        cross_mesh(urls, ROUTERS[0], ROUTERS[2], 50)
        timing("50 unsettled messages router 0 -> router 2 (port-forwards)", time.monotonic() - started)
        cross_mesh(urls, ROUTERS[2], ROUTERS[0], 10)
        for router, url in urls.items():
            known = router_ids_known(url)
            assert set(ROUTERS) - {router} <= set(known), f"{router} knows only {known}"


def test_inter_router_connections_use_mutual_tls(mesh: MeshState, e2e_kubeconfig: Path) -> None:
    """The default (spec.interRouter.tls.mode Managed): every inter-router connection is
    encrypted, and the accepting router authenticated the connecting one by its certificate
    (SASL EXTERNAL)."""
    mesh.require_ready()
    accepted = 0
    with port_forwards(e2e_kubeconfig, mesh.namespace, ROUTERS) as urls:
        for router, url in urls.items():
            rows = [r for r in entity_rows(url, "org.apache.qpid.dispatch.connection")
                    if r.get("role") == "inter-router" and r.get("opened")]
            assert len(rows) == len(ROUTERS) - 1, (router, rows)
            for row in rows:
                assert row.get("isEncrypted") and row.get("sslProto"), (router, row)
                if row.get("dir") == "in":
                    accepted += 1
                    assert row.get("isAuthenticated") and row.get("sasl") == "EXTERNAL", (router, row)
    assert accepted == len(ROUTERS) * (len(ROUTERS) - 1) // 2, "each link accepted at one end"


def test_link_route_live_on_every_router_without_restarts(
        mesh: MeshState, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    wanted = {"qdmesh/linkRoute/orders-in": "in", "qdmesh/linkRoute/orders-out": "out"}
    with port_forwards(e2e_kubeconfig, mesh.namespace, ROUTERS) as urls:
        assert not set(wanted) & set(link_routes(urls[ROUTERS[0]])), "link routes present before the test"
        started = time.monotonic()
        create_resource(k8s, mesh.namespace, "linkroutes", "LinkRoute", "orders",
                        {"meshRef": MESH, "prefix": "orders.", "containerId": "broker", "direction": "both"})

        def live_everywhere() -> bool:
            return all(set(wanted) <= set(link_routes(url)) for url in urls.values())

        eventually(live_everywhere, 60, "LinkRoute orders on every router", interval=0.5)
        timing("LinkRoute created -> live on all 3 routers (management)", time.monotonic() - started)
        for router, url in urls.items():
            entities = link_routes(url)
            for name, direction in wanted.items():
                entity = entities[name]
                assert (entity.get("prefix"), entity.get("direction"), entity.get("containerId")) == \
                    ("orders.", direction, "broker"), f"{router}: {entity}"

    eventually(lambda: is_true(read_resource(k8s, mesh.namespace, "linkroutes", "orders"), "Ready"), 60,
               "LinkRoute orders Ready",
               describe=lambda: status_summary(read_resource(k8s, mesh.namespace, "linkroutes", "orders")))
    timing("LinkRoute created -> status Ready", time.monotonic() - started)
    assert router_pods(k8s, mesh.namespace, MESH) == mesh.pods, "a router pod restarted or was replaced"


def test_kubectl_qdstat_shows_every_router(mesh: MeshState, e2e_kubeconfig: Path) -> None:
    mesh.require_ready()
    env = dict(os.environ)
    env["PATH"] = f"{Path(kubectl_binary()).parent}{os.pathsep}{env.get('PATH', '')}"
    out = run(["kubectl-qdstat", MESH, "-n", mesh.namespace, "--kubeconfig", str(e2e_kubeconfig), "--nodes"],
              timeout=90, env=env)
    print(out)
    for router in ROUTERS:
        assert router in out, f"kubectl qdstat --nodes does not show {router}:\n{out}"


def _replaced_and_ready(core: Any, mesh: MeshState, victim: str, old_uid: str) -> bool:
    try:
        pod = core.read_namespaced_pod(victim, mesh.namespace)
    except client.ApiException:
        return False  # between the deletion and the StatefulSet's new pod
    return bool(pod.metadata.uid != old_uid and
                any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []))


@pytest.mark.timeout(600)
def test_mesh_recovers_from_router_pod_deleted_mid_traffic(
        mesh: MeshState, core: Any, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    victim = ROUTERS[1]
    old_uid = router_pods(k8s, mesh.namespace, MESH)[victim].uid
    with port_forwards(e2e_kubeconfig, mesh.namespace, [ROUTERS[0], ROUTERS[2]]) as urls:
        address = f"e2e/{uuid.uuid4().hex[:8]}"
        net = Net()
        try:
            receiver = net.connect(f"amqp://{urls[ROUTERS[2]]}").receiver(address, credit=200)
            sender = net.connect(f"amqp://{urls[ROUTERS[0]]}").sender(address)
            sent: List[str] = []
            deleted_at = back_at = None
            started = time.monotonic()
            # Traffic flows router 0 -> router 2 directly (full mesh) from before router 1 is
            # deleted until its replacement is Ready: nothing may be lost, released or rejected.
            batch = 0
            while back_at is None:
                assert time.monotonic() - started < 120, f"{victim} not back and Ready within 120 s"
                bodies = [f"b{batch}-{i}" for i in range(5)]
                sent += bodies
                outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=30)
                assert [o.name for o in outcomes] == ["accepted"] * 5, \
                    f"batch {batch}: {sender.outcome_counts()}"
                if batch == 5:
                    core.delete_namespaced_pod(victim, mesh.namespace, grace_period_seconds=1)
                    deleted_at = time.monotonic()
                elif deleted_at is not None and batch % 5 == 0 and \
                        _replaced_and_ready(core, mesh, victim, old_uid):
                    back_at = time.monotonic()
                batch += 1
                net.pump(0.1)
            net.wait(lambda: len(receiver.received) >= len(sent), 10, "every message at router 2")
            assert receiver.bodies() == sent
            traffic_seconds = time.monotonic() - started
        finally:
            net.close()
    assert deleted_at is not None and back_at is not None
    timing(f"{victim} deleted -> new pod Ready (traffic flowing)", back_at - deleted_at)

    history: List[str] = []

    eventually(lambda: mesh_whole(k8s, mesh.namespace, SIZE, history, deleted_at), 120,
               "RouterMesh Ready and converged again", interval=1.0,
               describe=lambda: "\n".join(history))
    print("RouterMesh status after the deletion:\n" + "\n".join(history))
    timing(f"{victim} deleted -> RouterMesh Ready and converged again", time.monotonic() - deleted_at)
    with port_forwards(e2e_kubeconfig, mesh.namespace, ROUTERS) as urls:
        # A full mesh again: each router has its own connection to each other one (not merely a
        # route through a third router).
        def full_mesh() -> bool:
            return all(inter_router_peers(urls[r]) == sorted(set(ROUTERS) - {r}) for r in ROUTERS)

        took = eventually(full_mesh, 240, "every router directly connected to every other one again",
                          interval=2.0, describe=lambda: "\n".join(
                              f"{r}: {inter_router_peers(u)}" for r, u in urls.items()))
        timing(f"{victim} deleted -> every inter-router connection back (full mesh)",
               time.monotonic() - deleted_at)
        print(f"full mesh again {took:.1f} s after the RouterMesh was Ready")
        cross_mesh(urls, victim, ROUTERS[2], 10)
        cross_mesh(urls, ROUTERS[0], victim, 10)
        entities = link_routes(urls[victim])
    assert "qdmesh/linkRoute/orders-in" in entities, "the new router came back without the LinkRoute"
    print(f"traffic around the deletion: {len(sent)} messages in {traffic_seconds:.1f} s, all accepted")
    mesh.pods = router_pods(k8s, mesh.namespace, MESH)
