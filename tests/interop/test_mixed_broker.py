"""Link routes and auto-links across a mixed mesh, with RabbitMQ: a qdmesh router Q1 and a C
router C1 (qdrouterd 1.19) joined, each with a route-container connection to the broker.
What is declared on one kind is used by clients of the other: C1's link routes for
``/queue`` and auto-links for ``cq.*`` by clients on Q1, Q1's link routes for ``/exchange``
and auto-links for ``qq.*`` by clients on C1."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator, List

import pytest

from tests.broker.conftest import _session_broker, _session_brokers  # noqa: F401 (the fixture)
from tests.broker.rabbit import RabbitBroker
from tests.broker.waypoint import autolink, connector
from tests.interop.cpeer import section
from tests.interop.mixed_topology import AnyRouter, MixedMesh, is_c, query, running
from tests.router.amqpclient import Net, msg, send_and_settle

NAMES = ["Q1", "C1"]
LINK_TYPE = "org.apache.qpid.dispatch.router.link"
AUTOLINK_TYPE = "org.apache.qpid.dispatch.router.config.autoLink"


def link_routes(prefix: str) -> str:
    return "".join(section("linkRoute", {"prefix": prefix, "direction": d, "connection": "broker"})
                   for d in ("in", "out"))


def waypoint(prefix: str) -> str:
    return section("address", {"prefix": prefix, "waypoint": "yes"})


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[MixedMesh]:
    # The session's first broker (tests/broker/conftest.py): started on first use, shared.
    brokers: List[RabbitBroker] = request.getfixturevalue("_session_brokers")
    rabbit = _session_broker(brokers, 0, tmp_path_factory)
    workdir: Path = tmp_path_factory.mktemp("broker")
    suffix = str(int(time.time()))
    both = waypoint("cq") + waypoint("qq")
    c1 = (connector("broker", rabbit) + link_routes("/queue") + both
          + autolink("cq.x", "out", f"/queue/mixed-cq-{suffix}", "broker")
          + autolink("cq.x", "in", f"/queue/mixed-cq-{suffix}", "broker"))
    q1 = (connector("broker", rabbit) + link_routes("/exchange") + both
          + autolink("qq.x", "out", f"/queue/mixed-qq-{suffix}", "broker")
          + autolink("qq.x", "in", f"/queue/mixed-qq-{suffix}", "broker"))
    built = MixedMesh(workdir, NAMES, [("C1", "Q1")], c_extra={"C1": c1}, q_extra={"Q1": q1})
    built.suffix = suffix  # type: ignore[attr-defined]
    built.rabbit = rabbit  # type: ignore[attr-defined]
    yield from running(built, "Q1 and C1 to converge", lambda net: net.wait(
        lambda: all(active_autolinks(built[n]) == 2 for n in NAMES), 60,
        f"both routers' auto-links active on the broker\n{built.logs()}"))


def active_autolinks(router: AnyRouter) -> int:
    rows = query(router.url, AUTOLINK_TYPE, ["operStatus"])
    return sum(1 for row in rows if row["operStatus"] == "active")


def wait_link_routed(net: Net, router: AnyRouter, address: str, receiving: bool) -> None:
    """Until an attach at ``router`` for ``address`` is link-routed: the route's advertisement
    has crossed the mesh. Before that, either kind accepts the attach as an ordinary
    message-routed link."""
    client = net.connect(router.url)
    deadline = time.monotonic() + 30
    while True:
        probe = client.receiver(address, credit=0) if receiving else client.sender(address)
        name = probe.link.name
        rows = query(router.url, LINK_TYPE, ["linkName", "owningAddr"])
        routed = probe.remote_opened and not probe.remote_closed and any(
            row["linkName"] == name and link_routed_owner(router, address, row["owningAddr"]) for row in rows)
        probe.close()
        if routed:
            return
        assert time.monotonic() < deadline, f"{address} never became link-routed at {router.router_id}"
        net.pump(0.3)


def link_routed_owner(router: AnyRouter, address: str, owner: object) -> bool:
    """Whether a router.link row's owningAddr is a link-routed link's. Message-routed, the
    link is owned by the mobile address: qdmesh's key keeps the address as given
    ("M0/queue/x"), qdrouterd's is its hash form ("M0queue/x"). Link-routed, qdmesh names the
    route's key (C.../D...), qdrouterd the address as given."""
    if is_c(router.router_id):
        return owner != "M0" + address.lstrip("/")
    return str(owner or "")[:1] in ("C", "D")


def link_routed_round_trip(net: Net, router: AnyRouter, address: str, receive_from: str) -> None:
    wait_link_routed(net, router, address, receiving=False)
    wait_link_routed(net, router, receive_from, receiving=True)
    client = net.connect(router.url)
    receiver = client.receiver(receive_from)
    net.pump(1.0)  # the broker binds the receiver's queue
    bodies = [f"{address} #{n}" for n in range(3)]
    outcomes = send_and_settle(net, client.sender(address), [msg(b) for b in bodies], 20)
    assert [o.name for o in outcomes] == ["accepted"] * 3
    net.wait(lambda: len(receiver.received) == 3, 20,
             f"the messages back from the broker at {router.router_id}")
    assert receiver.bodies() == bodies


def test_c_routers_link_routes_used_from_qdmesh(mesh: MixedMesh, net: Net) -> None:
    """A link-routed sender on Q1 reaches the broker queue through C1 (C1's link route, which
    it advertises as "Cqueue": qdrouterd drops the leading "/"). Only this way: a link-routed
    *receiver* through a C router aborts that C router, qdmesh or C router on the client's
    side alike (docs/routing.md, "Differences from qdrouterd")."""
    queue = f"/queue/mixed-lr-{mesh.suffix}"  # type: ignore[attr-defined]
    router = mesh["Q1"]
    wait_link_routed(net, router, queue, receiving=False)
    bodies = [f"{queue} #{n}" for n in range(3)]
    outcomes = send_and_settle(net, net.connect(router.url).sender(queue), [msg(b) for b in bodies], 20)
    assert [o.name for o in outcomes] == ["accepted"] * 3
    assert mesh.rabbit.drain(queue) == bodies  # type: ignore[attr-defined]


def test_qdmesh_link_routes_used_from_the_c_router(mesh: MixedMesh, net: Net) -> None:
    link_routed_round_trip(net, mesh["C1"], "/exchange/amq.fanout", "/exchange/amq.fanout")


def autolinked_round_trip(net: Net, router: AnyRouter, address: str) -> None:
    producer = net.connect(router.url)
    sender = producer.sender(address)
    net.wait(lambda: sender.credit > 0, 30, f"credit for {address} at {router.router_id} (its queue known)")
    bodies = [f"{address} #{n}" for n in range(3)]
    outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], 20)
    assert [o.name for o in outcomes] == ["accepted"] * 3
    receiver = net.connect(router.url).receiver(address)
    net.wait(lambda: len(receiver.received) == 3, 30, f"the queued messages back at {router.router_id}")
    assert receiver.bodies() == bodies


def test_c_routers_auto_links_used_from_qdmesh(mesh: MixedMesh, net: Net) -> None:
    autolinked_round_trip(net, mesh["Q1"], "cq.x")


def test_qdmesh_auto_links_used_from_the_c_router(mesh: MixedMesh, net: Net) -> None:
    autolinked_round_trip(net, mesh["C1"], "qq.x")
