"""A broker in the cluster (RabbitMQ with its AMQP 1.0 plugin, images/e2e-broker) joined to a
RouterMesh of its own: the reference's queue waypoint scenario through an AutoLink pair, and a
LinkRoute straight to a broker queue, each used from different routers of the mesh.

The mesh's connector ``broker`` (role route-container) goes to the broker's Service; every
router connects to it, so every router has the auto-links, and each status shows them active.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from kubernetes import client

from tests.router.amqpclient import Net, msg, send_and_settle

from .kube import describe_namespace, eventually
from .mesh_fixtures import Timing, fresh_namespace
from .product import (
    apps_api,
    create_resource,
    is_true,
    package_version,
    port_forwards,
    read_resource,
    status_summary,
)
from .traffic import AUTO_LINK_TYPE, entities

MESH = "wp"
SIZE = 2
QUEUE_ADDRESS = "queue.orders"


def _broker_deployment(image: str) -> client.V1Deployment:
    labels = {"app": "e2e-broker"}
    container = client.V1Container(
        name="rabbitmq", image=image, image_pull_policy="Never",
        ports=[client.V1ContainerPort(container_port=5672, name="amqp")],
        readiness_probe=client.V1Probe(tcp_socket=client.V1TCPSocketAction(port=5672),
                                       period_seconds=2, failure_threshold=60))
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name="broker", labels=labels),
        spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels),
                                              spec=client.V1PodSpec(containers=[container]))))


def _broker_service() -> client.V1Service:
    return client.V1Service(
        metadata=client.V1ObjectMeta(name="broker"),
        spec=client.V1ServiceSpec(selector={"app": "e2e-broker"},
                                  ports=[client.V1ServicePort(name="amqp", port=5672, target_port=5672)]))


def _deployment_ready(k8s: Any, namespace: str) -> bool:
    dep = apps_api(k8s).read_namespaced_deployment("broker", namespace)
    return (dep.status.ready_replicas or 0) == 1


def _mesh_ready(k8s: Any, namespace: str) -> bool:
    obj = read_resource(k8s, namespace, "routermeshes", MESH)
    return is_true(obj, "Ready") and is_true(obj, "MeshConverged") and \
        (obj.get("status") or {}).get("readyRouters") == SIZE


def _autolinks_active(k8s: Any, namespace: str, name: str) -> bool:
    obj = read_resource(k8s, namespace, "autolinks", name)
    routers = (obj.get("status") or {}).get("routers") or []
    return is_true(obj, "Ready") and len(routers) == SIZE and \
        all(r.get("operStatus") == "active" for r in routers)


@pytest.fixture(scope="module")
def broker_mesh(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[str]:
    """The broker, a RouterMesh of 2 connected to it, an AutoLink pair and a LinkRoute; yields
    the namespace once the auto-links are active on both routers."""
    namespace = fresh_namespace(core, "broker")
    done = False
    try:
        started = time.monotonic()
        apps_api(k8s).create_namespaced_deployment(namespace, _broker_deployment(
            f"qdmesh/e2e-broker:{package_version()}"))
        core.create_namespaced_service(namespace, _broker_service())
        create_resource(k8s, namespace, "routermeshes", "RouterMesh", MESH, {
            "size": SIZE,
            "connectors": [{"name": "broker", "host": "broker", "port": 5672, "role": "route-container",
                            "saslMechanisms": "ANONYMOUS"}],
            "addresses": [{"prefix": "queue", "waypoint": True}],
        })
        for direction in ("in", "out"):
            create_resource(k8s, namespace, "autolinks", "AutoLink", f"orders-{direction}", {
                "meshRef": MESH, "address": QUEUE_ADDRESS, "direction": direction,
                "connection": "broker", "externalAddress": "/queue/orders"})
        create_resource(k8s, namespace, "linkroutes", "LinkRoute", "jobs", {
            "meshRef": MESH, "prefix": "lrq.", "direction": "both", "connection": "broker",
            "delExternalPrefix": "lrq.", "addExternalPrefix": "/queue/"})

        def describe() -> str:
            parts = [status_summary(read_resource(k8s, namespace, plural, name)) for plural, name in
                     (("routermeshes", MESH), ("autolinks", "orders-in"), ("autolinks", "orders-out"))]
            return "\n".join(parts) + "\n" + describe_namespace(core, namespace)

        eventually(lambda: _deployment_ready(k8s, namespace), 180, "the broker Deployment ready",
                   interval=1.0, describe=describe)
        timing("broker Deployment created -> ready", time.monotonic() - started)
        eventually(lambda: _mesh_ready(k8s, namespace), 240, f"RouterMesh {MESH} Ready and converged",
                   interval=1.0, describe=describe)
        # The routers' connectors retry with back-off while the broker starts: allow for it.
        eventually(lambda: _autolinks_active(k8s, namespace, "orders-in")
                   and _autolinks_active(k8s, namespace, "orders-out"), 180,
                   "both AutoLinks active on every router (status)", interval=1.0, describe=describe)
        timing("broker + RouterMesh + AutoLinks created -> auto-links active everywhere",
               time.monotonic() - started)
        done = True
        yield namespace
    finally:
        if not done:
            print(describe_namespace(core, namespace))
        core.delete_namespace(namespace, propagation_policy="Background")


def _urls(kubeconfig: Path, namespace: str) -> Any:
    return port_forwards(kubeconfig, namespace, [f"{MESH}-{i}" for i in range(SIZE)])


def test_auto_links_active_on_every_router(broker_mesh: str, e2e_kubeconfig: Path) -> None:
    with _urls(e2e_kubeconfig, broker_mesh) as urls:
        for router, url in urls.items():
            links = {e.get("direction") or e.get("dir"): e for e in entities(url, AUTO_LINK_TYPE).values()
                     if (e.get("address") or e.get("addr")) == QUEUE_ADDRESS}
            assert set(links) == {"in", "out"}, (router, links)
            assert all(e["operStatus"] == "active" for e in links.values()), (router, links)


def test_waypoint_queue_between_routers(broker_mesh: str, e2e_kubeconfig: Path, timing: Timing) -> None:
    """Sent to queue.orders at router 0: into the broker's queue through the in auto-links,
    out of it through the out auto-links, to a receiver at router 1. Every message accepted
    (by the broker) and received exactly once."""
    count = 20
    bodies = [f"order #{i}" for i in range(count)]
    with _urls(e2e_kubeconfig, broker_mesh) as urls:
        net = Net()
        try:
            started = time.monotonic()
            receiver = net.connect(f"amqp://{urls[f'{MESH}-1']}").receiver(QUEUE_ADDRESS, credit=count)
            sender = net.connect(f"amqp://{urls[f'{MESH}-0']}").sender(QUEUE_ADDRESS)
            outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=30)
            assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
            net.wait(lambda: len(receiver.received) >= count, 30, f"{count} orders at {MESH}-1")
            net.pump(0.5)
            assert sorted(receiver.bodies()) == sorted(bodies)
            timing(f"{count} messages router 0 -> broker queue -> router 1 (waypoint)",
                   time.monotonic() - started)
        finally:
            net.close()


def test_link_route_to_a_broker_queue(broker_mesh: str, e2e_kubeconfig: Path) -> None:
    """lrq.jobs is link-routed to the broker as /queue/jobs (prefix rewritten: the broker
    refuses a plain lrq.jobs): a sender at router 1 and a receiver at router 0 both reach that
    one queue."""
    count = 5
    bodies = [f"job #{i}" for i in range(count)]
    with _urls(e2e_kubeconfig, broker_mesh) as urls:
        net = Net()
        try:
            sender = net.connect(f"amqp://{urls[f'{MESH}-1']}").sender("lrq.jobs")
            assert sender.remote_opened and not sender.remote_closed, sender.remote_condition
            outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=30)
            assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
            receiver = net.connect(f"amqp://{urls[f'{MESH}-0']}").receiver("lrq.jobs", credit=count)
            assert receiver.remote_opened and not receiver.remote_closed, receiver.remote_condition
            net.wait(lambda: len(receiver.received) >= count, 30, f"{count} jobs at {MESH}-0")
            assert receiver.bodies() == bodies
        finally:
            net.close()
