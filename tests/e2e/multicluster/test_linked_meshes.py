"""Two RouterMeshes in two clusters joined by a MeshAccessGrant and a MeshLink, as a user
joins them (docs/multicluster.md): one resource on each side and the token Secret copied
across.

RouterMesh "east" (2 routers) accepts links: ``spec.linkAccess`` NodePort at its node's
address; the chart's redemption server in east is a NodePort at the same address. RouterMesh
"west" (3 routers) links with two connections (routers west-0 and west-1). Then:
- anycast both ways and multicast from east to both clusters, every message accepted and
  received once, and the round trip across the link measured beside one within east;
- the link-holding router a sender's messages cross is deleted while unsettled messages flow
  (its drain hands the traffic to the other link): every message accepted, none lost;
- a LinkRoute in east, to a queue of the broker (RabbitMQ) behind east, is used by a sender
  and a receiver in west;
- a pair of AutoLinks in east (a waypoint: into the broker's queue and out of it) is used by
  a sender and a receiver in west: west's messages go through east's broker queue and back;
- deleting the grant revokes the link: east's routers no longer see west's, and the MeshLink
  says it is not connected.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Callable, Dict, Iterator, List, Tuple

import pytest
from kubernetes import client

from tests.router.amqpclient import Net, SenderLink, msg, send_and_settle

from ..examples import autolink_active, broker_ready, deploy_broker
from ..kube import describe_namespace, eventually
from ..mesh_fixtures import mesh_whole
from ..product import (
    condition,
    create_resource,
    delete_resource,
    is_true,
    package_version,
    port_forwards,
    read_resource,
    status_summary,
)
from ..traffic import Traffic, cross_mesh, router_ids_known
from .conftest import Cluster, namespace_for, node_address
from .crossing import describe_times, multicast, round_trips

# One pair of linked meshes serves the module's tests in order (the last one revokes the link):
# setting them up takes minutes (the kubelet copies the link's files into running routers).
pytestmark = pytest.mark.timeout(900)

EAST_SIZE, WEST_SIZE = 2, 3
# Each mesh's address configuration, the same on both sides: address semantics are each
# router's own (where ``aq`` were not a waypoint, west's receiver would attach to phase 0 and
# take the sender's messages straight, past the broker).
ADDRESSES = [{"prefix": "mc", "distribution": "multicast"}, {"prefix": "aq", "waypoint": True}]
LINK_NODE_PORT = 31671
Timing = Callable[[str, float], None]


def routers(mesh: str, size: int) -> List[str]:
    return [f"{mesh}-{i}" for i in range(size)]


def wait_whole(cluster: Cluster, namespace: str, mesh: str, size: int) -> None:
    eventually(lambda: mesh_whole(cluster.api, namespace, size, name=mesh), 300,
               f"{cluster.name}: RouterMesh {mesh} Ready and MeshConverged", interval=1.0,
               describe=lambda: status_summary(read_resource(cluster.api, namespace, "routermeshes", mesh)) +
               "\n" + describe_namespace(cluster.core, namespace))


def copy_token(east: Cluster, east_ns: str, grant: str, west: Cluster, west_ns: str, name: str) -> None:
    """The token Secret east's operator wrote, copied into west as a user would (its data only)."""
    def written() -> bool:
        try:
            return bool(east.core.read_namespaced_secret(f"{grant}-token", east_ns).data)
        except client.ApiException as e:
            if e.status == 404:
                return False
            raise

    eventually(written, 120, f"east: the token Secret of grant {grant}",
               describe=lambda: status_summary(read_resource(east.api, east_ns, "meshaccessgrants", grant)))
    data = east.core.read_namespaced_secret(f"{grant}-token", east_ns).data
    west.core.create_namespaced_secret(west_ns, client.V1Secret(
        metadata=client.V1ObjectMeta(name=name), data=dict(data)))


def link_status(west: Cluster, ns: str, link: str) -> str:
    return status_summary(read_resource(west.api, ns, "meshlinks", link))


@pytest.fixture(scope="module")
def linked(east: Cluster, west: Cluster, operators: Dict[str, str], request: pytest.FixtureRequest,
           timing: Timing) -> Iterator[Tuple[str, str]]:
    """east and west, Ready, linked by grant ``to-west`` and MeshLink ``to-east``."""
    with namespace_for(east, request) as east_namespace, namespace_for(west, request) as west_namespace:
        yield from _link(east, west, east_namespace, west_namespace, timing)


def _link(east: Cluster, west: Cluster, east_namespace: str, west_namespace: str,
          timing: Timing) -> Iterator[Tuple[str, str]]:
    host = node_address(east)
    started = time.monotonic()
    deploy_broker(east.api, east.core, east_namespace, "broker", f"qdmesh/e2e-broker:{package_version()}")
    create_resource(east.api, east_namespace, "routermeshes", "RouterMesh", "east", {
        "size": EAST_SIZE, "addresses": ADDRESSES,
        "connectors": [{"name": "broker", "host": "broker", "port": 5672, "role": "route-container",
                        "saslMechanisms": "ANONYMOUS"}],
        "linkAccess": {"type": "NodePort", "host": host, "nodePort": LINK_NODE_PORT}})
    create_resource(west.api, west_namespace, "routermeshes", "RouterMesh", "west", {
        "size": WEST_SIZE, "addresses": ADDRESSES})
    wait_whole(east, east_namespace, "east", EAST_SIZE)
    wait_whole(west, west_namespace, "west", WEST_SIZE)
    timing("RouterMesh of 2 in east and of 3 in west -> both Ready and converged", time.monotonic() - started)

    started = time.monotonic()
    create_resource(east.api, east_namespace, "meshaccessgrants", "MeshAccessGrant", "to-west",
                    {"meshName": "east", "redemptionsAllowed": 1, "expirationWindow": "30m"})
    copy_token(east, east_namespace, "to-west", west, west_namespace, "east-token")
    create_resource(west.api, west_namespace, "meshlinks", "MeshLink", "to-east", {
        "meshName": "west", "tokenSecretRef": {"name": "east-token"}, "connections": 2})
    # The kubelet copies the link's files into the running routers (up to its sync period).
    eventually(lambda: is_true(read_resource(west.api, west_namespace, "meshlinks", "to-east"), "Connected"),
               300, "west: MeshLink to-east Connected", interval=2.0,
               describe=lambda: link_status(west, west_namespace, "to-east"))
    timing("MeshAccessGrant + MeshLink created -> link Connected", time.monotonic() - started)
    yield east_namespace, west_namespace


def test_linked_meshes_carry_anycast_and_multicast_and_show_the_link(
        east: Cluster, west: Cluster, linked: Tuple[str, str], timing: Timing) -> None:
    east_ns, west_ns = linked
    link = read_resource(west.api, west_ns, "meshlinks", "to-east")
    assert sorted(link["status"].get("remoteRouters") or []) == routers("east", EAST_SIZE), link["status"]
    assert (link["status"].get("remoteMesh") or {}).get("name") == "east", link["status"]
    grant = read_resource(east.api, east_ns, "meshaccessgrants", "to-west")
    assert grant["status"].get("redemptions") == 1, grant["status"]
    assert [x.get("linkName") for x in grant["status"].get("links") or []] == ["to-east"], grant["status"]

    everyone = routers("east", EAST_SIZE) + routers("west", WEST_SIZE)
    with ExitStack() as stack:
        urls = {**stack.enter_context(port_forwards(east.kubeconfig, east_ns, routers("east", EAST_SIZE))),
                **stack.enter_context(port_forwards(west.kubeconfig, west_ns, routers("west", WEST_SIZE)))}
        eventually(lambda: all(router_ids_known(urls[r]) == sorted(set(everyone) - {r}) for r in everyone),
                   120, "every router of both meshes in every router's router.node",
                   describe=lambda: "\n".join(f"{r}: {router_ids_known(urls[r])}" for r in everyone))
        # west-2 holds no link: its messages cross west's own links, then the clusters' link.
        cross_mesh(urls, "west-2", "east-1", 20, timeout=60)
        cross_mesh(urls, "east-1", "west-2", 20, timeout=60)
        got = multicast(urls, "east-1", ["east-0", "west-0", "west-2"], 10)
        expected = [f"east-1 multicast #{i}" for i in range(10)]
        assert got == {sink: expected for sink in ("east-0", "west-0", "west-2")}

        across = round_trips(urls, "west-0", "east-0", 20)
        within = round_trips(urls, "east-1", "east-0", 20)
        timing(f"20 round trips west-0 -> east-0 over the mutual-TLS link ({describe_times(across)})",
               sum(across))
        timing(f"20 round trips east-1 -> east-0 within east ({describe_times(within)})", sum(within))

    # Each mesh stays Ready with only its own routers, the other's in router.node aside.
    for cluster, ns, mesh, size in ((east, east_ns, "east", EAST_SIZE), (west, west_ns, "west", WEST_SIZE)):
        obj = read_resource(cluster.api, ns, "routermeshes", mesh)
        assert is_true(obj, "Ready") and obj["status"].get("readyRouters") == size, status_summary(obj)


def test_a_link_holding_router_deleted_under_traffic_loses_nothing(
        east: Cluster, west: Cluster, linked: Tuple[str, str], timing: Timing) -> None:
    east_ns, west_ns = linked
    with ExitStack() as stack:
        urls = {**stack.enter_context(port_forwards(east.kubeconfig, east_ns, ["east-1"])),
                **stack.enter_context(port_forwards(west.kubeconfig, west_ns, ["west-2"]))}
        traffic = Traffic(urls, "west-2", "east-1", stem="link-failover")
        try:
            for _ in range(10):
                traffic.batch("before")
            # Both west-0 and west-1 hold a link; west-2 reaches east through either (equal
            # cost): the one deleted drains, and the traffic moves to the other.
            victim = "west-0"
            west.core.delete_namespaced_pod(victim, west_ns)
            deleted = time.monotonic()
            traffic.until(lambda: time.monotonic() - deleted > 20, 60, "20 s of traffic", "during")
            for _ in range(10):
                traffic.batch("after")
            counts, lost = traffic.settle_all()
        finally:
            traffic.close()
    assert lost == [], f"accepted but never received: {lost[:10]}"
    assert counts == {"accepted": len(traffic.sent)}, counts
    timing(f"{len(traffic.sent)} unsettled messages west-2 -> east-1, {victim} deleted: all accepted",
           time.monotonic() - deleted)
    eventually(lambda: is_true(read_resource(west.api, west_ns, "meshlinks", "to-east"), "Connected"),
               300, "west: MeshLink to-east Connected again once west-0 is back", interval=2.0,
               describe=lambda: link_status(west, west_ns, "to-east"))


def test_a_link_route_in_east_reaches_its_broker_from_west(
        east: Cluster, west: Cluster, linked: Tuple[str, str], timing: Timing) -> None:
    """lrq.jobs is link-routed by east's routers to the broker's /queue/jobs: a sender on west-2
    and, afterwards, a receiver on west-1 both reach that one queue across the link."""
    east_ns, west_ns = linked
    eventually(lambda: broker_ready(east.api, east_ns, "broker"), 240, "east: the broker ready",
               describe=lambda: describe_namespace(east.core, east_ns))
    started = time.monotonic()
    create_resource(east.api, east_ns, "linkroutes", "LinkRoute", "jobs", {
        "meshRef": "east", "prefix": "lrq.", "direction": "both", "connection": "broker",
        "delExternalPrefix": "lrq.", "addExternalPrefix": "/queue/"})
    eventually(lambda: is_true(read_resource(east.api, east_ns, "linkroutes", "jobs"), "Reachable"), 240,
               "east: LinkRoute jobs Reachable (the broker connected)", interval=2.0,
               describe=lambda: status_summary(read_resource(east.api, east_ns, "linkroutes", "jobs")))
    count = 10
    bodies = [f"job #{i}" for i in range(count)]
    with port_forwards(west.kubeconfig, west_ns, ["west-1", "west-2"]) as urls:
        net = Net()
        try:
            client = net.connect(f"amqp://{urls['west-2']}", timeout=60)
            senders: List[SenderLink] = []

            def attached() -> bool:
                # The prefix reaches west's routers over the link a moment after it is Reachable;
                # until then an attach is refused (no route).
                sender = client.sender("lrq.jobs")
                if sender.remote_opened and not sender.remote_closed:
                    senders.append(sender)
                return bool(senders)

            eventually(attached, 120, "a sender on west-2 attached to lrq.jobs (link-routed to east)")
            sender = senders[0]
            outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=60)
            assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
            receiver = net.connect(f"amqp://{urls['west-1']}", timeout=60).receiver("lrq.jobs", credit=count)
            assert receiver.remote_opened and not receiver.remote_closed, receiver.remote_condition
            net.wait(lambda: len(receiver.received) >= count, 60, f"{count} jobs at west-1")
            assert receiver.bodies() == bodies
        finally:
            net.close()
    timing(f"LinkRoute in east created -> {count} jobs from west through east's broker back to west",
           time.monotonic() - started)


def test_auto_links_in_east_carry_west_traffic_through_the_broker(
        east: Cluster, west: Cluster, linked: Tuple[str, str], timing: Timing) -> None:
    """AutoLinks in east, out to and in from the broker's /queue/aq.jobs (address aq.jobs, a
    waypoint in both meshes): a sender on west-2 and a receiver on west-1, neither in east,
    exchange messages through that queue, every message accepted (by the broker) and received
    once."""
    east_ns, west_ns = linked
    eventually(lambda: broker_ready(east.api, east_ns, "broker"), 240, "east: the broker ready",
               describe=lambda: describe_namespace(east.core, east_ns))
    started = time.monotonic()
    names = ("aq-jobs-out", "aq-jobs-in")
    for name, direction in zip(names, ("out", "in")):
        create_resource(east.api, east_ns, "autolinks", "AutoLink", name, {
            "meshRef": "east", "address": "aq.jobs", "externalAddress": "/queue/aq.jobs",
            "direction": direction, "connection": "broker"})
    eventually(lambda: all(autolink_active(east.api, east_ns, name, EAST_SIZE) for name in names), 180,
               "east: both AutoLinks active on every router", interval=1.0,
               describe=lambda: "\n".join(status_summary(read_resource(east.api, east_ns, "autolinks", n))
                                          for n in names))
    count = 10
    bodies = [f"aq job #{i}" for i in range(count)]
    with port_forwards(west.kubeconfig, west_ns, ["west-1", "west-2"]) as urls:
        net = Net()
        try:
            receiver = net.connect(f"amqp://{urls['west-1']}", timeout=60).receiver("aq.jobs", credit=count)
            sender = net.connect(f"amqp://{urls['west-2']}", timeout=60).sender("aq.jobs")
            # The auto-links' addresses reach west's routers over the link a moment after they
            # are active: until then west-2 has no credit to give (no destination).
            outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=120)
            assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
            net.wait(lambda: len(receiver.received) >= count, 60, f"{count} messages at west-1")
            net.pump(0.5)
            assert sorted(receiver.bodies()) == sorted(bodies)
        finally:
            net.close()
    timing(f"AutoLinks in east created -> {count} messages west -> east's broker queue -> west",
           time.monotonic() - started)


def test_deleting_the_grant_revokes_the_link(
        east: Cluster, west: Cluster, linked: Tuple[str, str], timing: Timing) -> None:
    east_ns, west_ns = linked
    started = time.monotonic()
    delete_resource(east.api, east_ns, "meshaccessgrants", "to-west")
    with port_forwards(east.kubeconfig, east_ns, routers("east", EAST_SIZE)) as urls:
        eventually(lambda: all(router_ids_known(urls[r]) == sorted(set(routers("east", EAST_SIZE)) - {r})
                               for r in urls),
                   300, "east's routers see only each other once the grant is deleted", interval=2.0,
                   describe=lambda: "\n".join(f"{r}: {router_ids_known(urls[r])}" for r in urls))
    timing("grant deleted -> the link's connections closed", time.monotonic() - started)

    def disconnected() -> bool:
        found = condition(read_resource(west.api, west_ns, "meshlinks", "to-east"), "Connected")
        return found is not None and found.get("status") != "True"

    eventually(disconnected, 120, "west: MeshLink to-east no longer Connected",
               describe=lambda: link_status(west, west_ns, "to-east"))
    # The revoked certificate stays out while west's connectors keep dialling (every 2-64 s).
    with port_forwards(east.kubeconfig, east_ns, ["east-0"]) as urls:
        watched = time.monotonic()
        while time.monotonic() - watched < 30:
            assert router_ids_known(urls["east-0"]) == ["east-1"], "a revoked link came back"
            time.sleep(2)

