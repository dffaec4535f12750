"""Which attaches are routed where: prefixes on token boundaries, patterns with * and #, the
longest/most specific route, directions, external prefixes and containerId."""

from __future__ import annotations

from typing import Dict, List

import pytest

from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle
from tests.router.routerproc import Router, RouterFactory

from .conftest import EdgeFactory
from .lrutil import Peer, both_ways, connector, link_route, wait_active


def _peers(net: Net, names: List[str]) -> Dict[str, Peer]:
    return {n: Peer(net, container_id=n) for n in names}


def _edge(net: Net, edge_factory: EdgeFactory, peers: Dict[str, Peer], routes: str) -> Router:
    edge = edge_factory(routes, {n: p.port for n, p in peers.items()})
    net.wait(lambda: all(p.connections for p in peers.values()), 20, "the router to connect to every peer")
    return edge


def _where(net: Net, edge: Router, peers: Dict[str, Peer], address: str, kind: str) -> str:
    """Attach a client link to ``address``; name the peer that got it, or 'local' when R1 kept it."""
    client = net.connect(edge.url)
    link = client.sender(address) if kind == "sender" else client.receiver(address)
    assert link.remote_opened and not link.remote_closed, (address, link.remote_condition)
    net.pump(0.3)
    # (qdrouterd names the routed link NAME@UUID, qdmesh NAME: either identifies it here)
    hits = [n for n, p in peers.items()
            if any(pl.name.split("@")[0] == link.link.name for pl in p.links.values())]
    assert len(hits) <= 1, f"{address} went to several containers: {hits}"
    client.close()
    return hits[0] if hits else "local"


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_prefix_longest_match_on_token_boundaries(net: Net, edge_factory: EdgeFactory, kind: str) -> None:
    peers = _peers(net, ["p1", "p2"])
    routes = both_ways("a", connection="p1") + both_ways("a.b", connection="p2")
    edge = _edge(net, edge_factory, peers, routes)
    expected = {"a": "p1", "a.x": "p1", "a/x": "p1", "a.b": "p2", "a.b.x": "p2", "a.b/x": "p2",
                "a.bc": "p1", "ab": "local", "b.a": "local"}
    got = {addr: _where(net, edge, peers, addr, kind) for addr in expected}
    assert got == expected


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_patterns_star_and_hash(net: Net, edge_factory: EdgeFactory, kind: str) -> None:
    peers = _peers(net, ["star", "hash"])
    routes = both_ways(pattern="a.*.c", connection="star") + both_ways(pattern="a.#", connection="hash")
    edge = _edge(net, edge_factory, peers, routes)
    expected = {"a.b.c": "star", "a.xyz.c": "star", "a": "hash", "a.b": "hash", "a.b.c.d": "hash",
                "a.x.y.c": "hash", "ab.c": "local", "b.a.c": "local"}
    got = {addr: _where(net, edge, peers, addr, kind) for addr in expected}
    assert got == expected


def test_star_needs_exactly_one_token(net: Net, edge_factory: EdgeFactory) -> None:
    peers = _peers(net, ["star"])
    edge = _edge(net, edge_factory, peers, both_ways(pattern="x.*.z", connection="star"))
    expected = {"x.y.z": "star", "x.z": "local", "x.y.y.z": "local", "x.y.z.w": "local"}
    assert {a: _where(net, edge, peers, a, "sender") for a in expected} == expected


def test_routes_are_per_direction(net: Net, edge_factory: EdgeFactory) -> None:
    """An `in` route routes client senders only; receivers on the same address stay local."""
    peers = _peers(net, ["p"])
    edge = _edge(net, edge_factory, peers, link_route("in", "onlyin", connection="p")
                 + link_route("out", "onlyout", connection="p"))
    assert _where(net, edge, peers, "onlyin.x", "sender") == "p"
    assert _where(net, edge, peers, "onlyin.x", "receiver") == "local"
    assert _where(net, edge, peers, "onlyout.x", "receiver") == "p"
    assert _where(net, edge, peers, "onlyout.x", "sender") == "local"


def test_old_dir_attribute(net: Net, edge_factory: EdgeFactory) -> None:
    """The 0.7 book's ``dir: in|out`` spelling."""
    peers = _peers(net, ["broker"])
    edge = _edge(net, edge_factory, peers, both_ways("b2", connection="broker", old_names=True))
    assert _where(net, edge, peers, "b2.queues.app1", "sender") == "broker"
    assert _where(net, edge, peers, "b2", "receiver") == "broker"


@pytest.mark.differs_from_c("qdrouterd names the link it routes CLIENT-NAME@UUID; qdmesh keeps the client's "
                            "link name")
@pytest.mark.parametrize("add,delete,address,external", [
    ("/queue/", "ext.", "ext.orders", "/queue/orders"),
    (None, "ext.", "ext.orders", "orders"),
    ("pre.", None, "ext.orders", "pre.ext.orders"),
    ("/queue/", "other.", "ext.orders", "/queue/ext.orders"),
])
@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_external_prefixes_change_the_container_address(net: Net, edge_factory: EdgeFactory, kind: str,
                                                        add: str, delete: str, address: str,
                                                        external: str) -> None:
    peers = _peers(net, ["p"])
    edge = _edge(net, edge_factory, peers, both_ways("ext", connection="p", add=add, delete=delete))
    client = net.connect(edge.url)
    link = client.sender(address) if kind == "sender" else client.receiver(address)
    assert link.remote_opened and not link.remote_closed, link.remote_condition
    plink = peers["p"].wait_link(external)
    assert plink.name == link.link.name, "the routed link keeps the client's link name"


def test_external_prefix_end_to_end_through_a_router_container(edge_factory: EdgeFactory,
                                                               container: Router, net: Net) -> None:
    edge = edge_factory(both_ways("ext", connection="cont", add="/queue/", delete="ext."),
                        {"cont": container.port}, active=2)
    c_side = net.connect(container.url)
    consumer = c_side.receiver("/queue/orders")
    client = net.connect(edge.url)
    outcomes = send_and_settle(net, client.sender("ext.orders"), [msg("o1"), msg("o2")])
    assert [o.state for o in outcomes] == [ACCEPTED, ACCEPTED]
    net.wait(lambda: consumer.bodies() == ["o1", "o2"], 10, "the orders at /queue/orders on C")

    rcv = client.receiver("ext.replies")
    producer = c_side.sender("/queue/replies")
    send_and_settle(net, producer, [msg("r1")])
    net.wait(lambda: rcv.bodies() == ["r1"], 10, "the reply from /queue/replies on C")


def test_container_id_via_connector(edge_factory: EdgeFactory, container: Router, net: Net) -> None:
    """``containerId: C`` finds the connection whose remote container id is C (router C's id),
    whatever the connector is called."""
    edge = edge_factory(both_ways("cid", container_id="C"), {"anyname": container.port}, active=2)
    consumer = net.connect(container.url).receiver("cid.q")
    outcomes = send_and_settle(net, net.connect(edge.url).sender("cid.q"), [msg("by-id")])
    assert outcomes[0].state == ACCEPTED
    net.wait(lambda: consumer.bodies() == ["by-id"], 10, "the message at C")


def test_container_id_of_a_container_that_connects_in(router_factory: RouterFactory, net: Net) -> None:
    """The container may connect to the router (listener role route-container), as a broker does."""
    edge = router_factory(router_id="R1", extra_listeners={"rc": {"role": "route-container"}},
                          extra_config=both_ways("cin", container_id="C"))
    to_edge = connector("toedge", edge.ports["rc"], role="normal")
    container = router_factory(router_id="C", extra_config=to_edge)
    wait_active(edge, 2, net=net)
    producer = net.connect(container.url).sender("cin.q")
    rcv = net.connect(edge.url).receiver("cin.q")
    assert rcv.remote_opened and not rcv.remote_closed, rcv.remote_condition
    send_and_settle(net, producer, [msg("from C")])
    net.wait(lambda: rcv.bodies() == ["from C"], 10, "the message from C")


def test_wrong_container_id_is_no_route(edge_factory: EdgeFactory, container: Router, net: Net) -> None:
    edge = edge_factory(both_ways("cid", container_id="not-C"), {"cont": container.port})
    snd = net.connect(edge.url).sender("cid.q")
    net.wait(lambda: snd.remote_closed, 5, "the refusal")
    assert snd.remote_condition is not None and snd.remote_condition.name == "qd:no-route-to-dest"


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_the_client_sees_the_address_it_asked_for_not_the_containers(
        edge_factory: EdgeFactory, container: Router, net: Net, kind: str) -> None:
    """The container answers with its own address (/queue/orders); the router undoes the route's
    external prefixes in that answer, so a client that checks its terminus (proton's
    BlockingConnection refuses a sender whose target differs) sees ext.orders."""
    edge = edge_factory(both_ways("ext", connection="cont", add="/queue/", delete="ext."),
                        {"cont": container.port}, active=2)
    client = net.connect(edge.url)
    link = client.sender("ext.orders") if kind == "sender" else client.receiver("ext.orders")
    assert link.remote_opened and not link.remote_closed, link.remote_condition
    terminus = link.link.remote_target if kind == "sender" else link.link.remote_source
    assert terminus.address == "ext.orders"
