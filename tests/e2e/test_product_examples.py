"""docs/examples in the cluster, each file applied as it is (server-side apply) into a namespace of
its own with RabbitMQ brokers (images/e2e-broker) behind the Services it names, and its scenario
checked the way a user would see it working. (queue-waypoint.yaml is test_product_broker.py's.)

- sharded-queue.yaml: queue.first over two brokers; messages sent at one router all arrive at
  another, and both brokers carried some of them.
- link-route-private-broker.yaml: b2.* link-routed to a broker in the namespace ``private``;
  what a sender at one router puts into b2.jobs, a receiver at another router gets, in order.
- vhost-policies.yaml: the book's vhost examples 2 to 4 on every router, and enforced: example.com
  lets an unknown user receive from news* but not from elsewhere, traders.com refuses unknown
  users, any other vhost falls back to $default.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from kubernetes import client

from tests.policy.harness import login, refusal
from tests.router.amqpclient import Net, msg, send_and_settle

from .examples import apply_example, autolink_active, broker_ready, deploy_broker, mesh_ready
from .kube import describe_namespace, eventually
from .mesh_fixtures import Timing, fresh_namespace
from .product import is_true, package_version, port_forwards, read_resource, status_summary
from .traffic import VHOST_TYPE, entities, entity_rows

SIZE = 3  # every example's RouterMesh
LINK_TYPE = "org.apache.qpid.dispatch.router.link"
CONNECTION_TYPE = "org.apache.qpid.dispatch.connection"
PRIVATE = "private"  # link-route-private-broker.yaml names private-broker.private.svc

pytestmark = pytest.mark.timeout(600)


def broker_image() -> str:
    return f"qdmesh/e2e-broker:{package_version()}"


def routers(mesh: str) -> List[str]:
    return [f"{mesh}-{i}" for i in range(SIZE)]


def _describe(k8s: Any, core: Any, namespace: str, applied: List[Any]) -> str:
    parts = [f"{plural}/{name}: {status_summary(read_resource(k8s, namespace, plural, name))}"
             for plural, name in applied]
    return "\n".join(parts) + "\n" + describe_namespace(core, namespace)


def _wait_mesh(k8s: Any, core: Any, namespace: str, mesh: str, applied: List[Any]) -> None:
    eventually(lambda: mesh_ready(k8s, namespace, mesh, SIZE), 240, f"RouterMesh {mesh} Ready and converged",
               interval=1.0, describe=lambda: _describe(k8s, core, namespace, applied))


def _broker_connections(url: str, host: str) -> List[Dict[str, Any]]:
    """This router's open connections to ``host`` (host:port as its connector dials it)."""
    return [row for row in entity_rows(url, CONNECTION_TYPE)
            if row.get("host") == host and row.get("role") == "route-container" and row.get("opened")]


# -- sharded-queue.yaml --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sharded(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[str]:
    namespace = fresh_namespace(core, "sharded")
    applied: List[Any] = []
    try:
        started = time.monotonic()
        for broker in ("broker1", "broker2"):
            deploy_broker(k8s, core, namespace, broker, broker_image())
        applied = apply_example(k8s, namespace, "sharded-queue")
        auto_links = [name for plural, name in applied if plural == "autolinks"]
        assert len(auto_links) == 4, applied
        eventually(lambda: all(broker_ready(k8s, namespace, b) for b in ("broker1", "broker2")), 180,
                   "Deployments broker1 and broker2 ready", interval=1.0,
                   describe=lambda: _describe(k8s, core, namespace, applied))
        _wait_mesh(k8s, core, namespace, "sharded", applied)
        eventually(lambda: all(autolink_active(k8s, namespace, name, SIZE) for name in auto_links), 180,
                   "the four AutoLinks active on every router (status)", interval=1.0,
                   describe=lambda: _describe(k8s, core, namespace, applied))
        timing("sharded-queue.yaml + 2 brokers -> auto-links active everywhere", time.monotonic() - started)
        yield namespace
    finally:
        core.delete_namespace(namespace, propagation_policy="Background")


def test_sharded_queue_uses_both_brokers(sharded: str, e2e_kubeconfig: Path) -> None:
    """20 messages to queue.first at sharded-0, a receiver at sharded-2: all accepted, all
    received once, and the routers' out auto-links carried some to each broker."""
    count = 20
    bodies = [f"shard #{i}" for i in range(count)]
    with port_forwards(e2e_kubeconfig, sharded, routers("sharded")) as urls:
        net = Net()
        try:
            receiver = net.connect(f"amqp://{urls['sharded-2']}").receiver("queue.first", credit=count)
            sender = net.connect(f"amqp://{urls['sharded-0']}").sender("queue.first")
            outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=30)
            assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
            net.wait(lambda: len(receiver.received) >= count, 30, f"{count} messages at sharded-2")
            net.pump(0.5)
            assert sorted(receiver.bodies()) == sorted(bodies)
        finally:
            net.close()
        per_broker = {broker: 0 for broker in ("broker1", "broker2")}
        for url in urls.values():
            links = entity_rows(url, LINK_TYPE)
            for broker in per_broker:
                ids = {str(c.get("identity")) for c in _broker_connections(url, f"{broker}:5672")}
                per_broker[broker] += sum(int(link.get("deliveryCount") or 0) for link in links
                                          if link.get("linkDir") == "out"
                                          and str(link.get("connectionId")) in ids)
    print(f"messages to each shard: {per_broker}")
    assert all(n > 0 for n in per_broker.values()), f"a shard carried nothing: {per_broker}"
    assert sum(per_broker.values()) >= count, per_broker


# -- link-route-private-broker.yaml ----------------------------------------------------------------
def _namespace_gone(core: Any, name: str) -> bool:
    try:
        core.read_namespace(name)
    except client.ApiException as e:
        if e.status == 404:
            return True
        raise
    return False


@pytest.fixture(scope="module")
def private_broker(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[str]:
    """The broker in the namespace ``private``, the example in a namespace of its own; yields that
    namespace once every router is connected to the broker and the LinkRoute is Ready."""
    eventually(lambda: _namespace_gone(core, PRIVATE), 180, f"namespace {PRIVATE} of an earlier run gone")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=PRIVATE)))
    namespace = fresh_namespace(core, "public")
    applied: List[Any] = []
    try:
        started = time.monotonic()
        deploy_broker(k8s, core, PRIVATE, "private-broker", broker_image())
        applied = apply_example(k8s, namespace, "link-route-private-broker")
        assert applied == [("routermeshes", "public"), ("linkroutes", "b2")], applied
        eventually(lambda: broker_ready(k8s, PRIVATE, "private-broker"), 180, "the private broker ready",
                   interval=1.0, describe=lambda: describe_namespace(core, PRIVATE))
        _wait_mesh(k8s, core, namespace, "public", applied)
        eventually(lambda: is_true(read_resource(k8s, namespace, "linkroutes", "b2"), "Ready"), 90,
                   "LinkRoute b2 Ready", describe=lambda: _describe(k8s, core, namespace, applied))
        timing("link-route-private-broker.yaml + broker -> mesh and LinkRoute Ready",
               time.monotonic() - started)
        yield namespace
    finally:
        core.delete_namespace(namespace, propagation_policy="Background")
        core.delete_namespace(PRIVATE, propagation_policy="Background")


def test_link_route_to_the_private_broker(private_broker: str, e2e_kubeconfig: Path) -> None:
    count = 5
    bodies = [f"b2 job #{i}" for i in range(count)]
    with port_forwards(e2e_kubeconfig, private_broker, routers("public")) as urls:
        # Each router dials the broker itself (the connector is on every router); its connector
        # retries with back-off while the broker starts.
        eventually(lambda: all(_broker_connections(url, "private-broker.private.svc:5672")
                               for url in urls.values()), 120, "every router connected to the private broker")
        net = Net()
        try:
            sender = net.connect(f"amqp://{urls['public-0']}").sender("b2.jobs")
            assert sender.remote_opened and not sender.remote_closed, sender.remote_condition
            outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=30)
            assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
            receiver = net.connect(f"amqp://{urls['public-2']}").receiver("b2.jobs", credit=count)
            assert receiver.remote_opened and not receiver.remote_closed, receiver.remote_condition
            net.wait(lambda: len(receiver.received) >= count, 30, f"{count} jobs at public-2")
            assert receiver.bodies() == bodies
        finally:
            net.close()


# -- vhost-policies.yaml -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def policed(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[str]:
    namespace = fresh_namespace(core, "policed")
    try:
        started = time.monotonic()
        applied = apply_example(k8s, namespace, "vhost-policies")
        policies = [name for plural, name in applied if plural == "vhostpolicies"]
        assert policies == ["default-vhost", "example-com", "traders-com"], applied
        _wait_mesh(k8s, core, namespace, "policed", applied)
        eventually(lambda: all(is_true(read_resource(k8s, namespace, "vhostpolicies", name), "Ready")
                               for name in policies), 90, "the three VhostPolicies Ready",
                   describe=lambda: _describe(k8s, core, namespace, applied))
        timing("vhost-policies.yaml -> mesh and VhostPolicies Ready", time.monotonic() - started)
        yield namespace
    finally:
        core.delete_namespace(namespace, propagation_policy="Background")


def test_vhost_policies_on_every_router_and_enforced(policed: str, e2e_kubeconfig: Path) -> None:
    with port_forwards(e2e_kubeconfig, policed, routers("policed")) as urls:
        for router, url in urls.items():
            vhosts = entities(url, VHOST_TYPE)
            hostnames = {str(v.get("hostname")) for name, v in vhosts.items()
                         if name.startswith("qdmesh/vhost/")}
            assert hostnames == {"$default", "example.com", "traders.com"}, (router, vhosts)
        url = f"amqp://{urls['policed-1']}"
        net = Net()
        try:
            # Example 3: an unknown user on example.com is in $default: news* yes, anything else no.
            guest = login(net, url, vhost="example.com")
            news = guest.receiver("news.today")
            assert news.remote_opened and not news.remote_closed, news.remote_condition
            orders = guest.receiver("orders")
            net.wait(lambda: orders.remote_closed, 10, "the receiver from orders to be refused")
            condition = orders.remote_condition
            assert condition is not None and "sources do not allow 'orders'" in str(condition.description)
            # Example 4: traders.com knows only its traders and feeds.
            assert "allowUnknownUser is false" in refusal(net, url, vhost="traders.com")
            # Example 2: any other vhost falls back to $default, open to everything.
            other = login(net, url, vhost="elsewhere.example")
            anything = other.receiver("orders")
            assert anything.remote_opened and not anything.remote_closed, anything.remote_condition
        finally:
            net.close()
