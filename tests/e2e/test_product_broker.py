"""A broker in the cluster (RabbitMQ with its AMQP 1.0 plugin, images/e2e-broker) joined to a
RouterMesh of its own: the reference's queue waypoint scenario exactly as
docs/examples/queue-waypoint.yaml gives it (a RouterMesh ``waypoint`` of 3 and the AutoLink pairs
of queue.first and queue.second, applied from the file), and a LinkRoute of the test's own straight
to a broker queue, each used from different routers of the mesh.

The mesh's connector ``broker`` (role route-container) goes to the broker's Service; every
router connects to it, so every router has the auto-links, and each status shows them active.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.router.amqpclient import Net, msg, send_and_settle

from .examples import apply_example, autolink_active, broker_ready, deploy_broker, mesh_ready
from .kube import describe_namespace, eventually
from .mesh_fixtures import Timing, fresh_namespace
from .product import create_resource, package_version, port_forwards, read_resource, status_summary
from .traffic import AUTO_LINK_TYPE, entities

MESH = "waypoint"
SIZE = 3
QUEUES = ("queue.first", "queue.second")
AUTO_LINKS = ("queue-first-in", "queue-first-out", "queue-second-in", "queue-second-out")


@pytest.fixture(scope="module")
def broker_mesh(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[str]:
    """The broker, docs/examples/queue-waypoint.yaml and a LinkRoute; yields the namespace once
    the example's four auto-links are active on every router."""
    namespace = fresh_namespace(core, "broker")
    done = False
    try:
        started = time.monotonic()
        deploy_broker(k8s, core, namespace, "broker", f"qdmesh/e2e-broker:{package_version()}")
        applied = apply_example(k8s, namespace, "queue-waypoint")
        assert applied == [("routermeshes", MESH)] + [("autolinks", name) for name in AUTO_LINKS], applied
        create_resource(k8s, namespace, "linkroutes", "LinkRoute", "jobs", {
            "meshRef": MESH, "prefix": "lrq.", "direction": "both", "connection": "broker",
            "delExternalPrefix": "lrq.", "addExternalPrefix": "/queue/"})

        def describe() -> str:
            parts = [status_summary(read_resource(k8s, namespace, plural, name)) for plural, name in applied]
            return "\n".join(parts) + "\n" + describe_namespace(core, namespace)

        eventually(lambda: broker_ready(k8s, namespace, "broker"), 180, "the broker Deployment ready",
                   interval=1.0, describe=describe)
        timing("broker Deployment created -> ready", time.monotonic() - started)
        eventually(lambda: mesh_ready(k8s, namespace, MESH, SIZE), 240,
                   f"RouterMesh {MESH} Ready and converged", interval=1.0, describe=describe)
        # The routers' connectors retry with back-off while the broker starts: allow for it.
        eventually(lambda: all(autolink_active(k8s, namespace, name, SIZE) for name in AUTO_LINKS), 180,
                   "the four AutoLinks active on every router (status)", interval=1.0, describe=describe)
        timing("broker + queue-waypoint.yaml applied -> auto-links active everywhere",
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
            rows = entities(url, AUTO_LINK_TYPE).values()
            for queue in QUEUES:
                links = {e.get("direction") or e.get("dir"): e for e in rows
                         if (e.get("address") or e.get("addr")) == queue}
                assert set(links) == {"in", "out"}, (router, queue, links)
                assert all(e["operStatus"] == "active" for e in links.values()), (router, queue, links)
                assert {e.get("externalAddress") or e.get("externalAddr") for e in links.values()} == \
                    {f"/queue/{queue}"}, (router, queue, links)


@pytest.mark.parametrize("queue, source, sink, count", [
    ("queue.first", 0, SIZE - 1, 20),
    ("queue.second", SIZE - 1, 1, 5),
])
def test_waypoint_queue_between_routers(broker_mesh: str, e2e_kubeconfig: Path, timing: Timing,
                                        queue: str, source: int, sink: int, count: int) -> None:
    """Sent to the queue's address at one router: into the broker's queue through the in
    auto-links, out of it through the out auto-links, to a receiver at another router. Every
    message accepted (by the broker) and received exactly once."""
    bodies = [f"{queue} #{i}" for i in range(count)]
    with _urls(e2e_kubeconfig, broker_mesh) as urls:
        net = Net()
        try:
            started = time.monotonic()
            receiver = net.connect(f"amqp://{urls[f'{MESH}-{sink}']}").receiver(queue, credit=count)
            sender = net.connect(f"amqp://{urls[f'{MESH}-{source}']}").sender(queue)
            outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=30)
            assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
            net.wait(lambda: len(receiver.received) >= count, 30, f"{count} messages at {MESH}-{sink}")
            net.pump(0.5)
            assert sorted(receiver.bodies()) == sorted(bodies)
            timing(f"{count} messages router {source} -> broker queue {queue} -> router {sink} (waypoint)",
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
