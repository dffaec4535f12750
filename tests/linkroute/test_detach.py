"""Detach in either direction with its error, lost containers and missing containers."""

from __future__ import annotations

import signal

import pytest
from proton import Condition, Endpoint

from tests.router.amqpclient import Net, msg
from tests.router.routerproc import Router, free_port

from .conftest import EdgeFactory
from .lrutil import NO_ROUTE, Peer, both_ways, statuses, wait_active, wait_for


@pytest.fixture
def peer_edge(net: Net, edge_factory: EdgeFactory) -> tuple:
    peer = Peer(net)
    edge = edge_factory(both_ways("lr", connection="peer"), {"peer": peer.port})
    net.wait(lambda: bool(peer.connections), 20, "the router to connect to the peer")
    return peer, edge


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_container_detach_reaches_client_with_its_error(net: Net, peer_edge: tuple, kind: str) -> None:
    peer, edge = peer_edge
    client = net.connect(edge.url)
    link = client.sender("lr.detach") if kind == "sender" else client.receiver("lr.detach")
    plink = peer.wait_link("lr.detach")
    assert link.remote_opened and not link.remote_closed, link.remote_condition
    plink.detach("app:queue-deleted", "queue lr.detach was deleted")
    net.wait(lambda: link.remote_closed, 10, "the detach at the client")
    cond = link.remote_condition
    assert cond is not None, "the client's link was detached without the container's error"
    assert (cond.name, cond.description) == ("app:queue-deleted", "queue lr.detach was deleted"), cond
    assert client.alive, "only the link may end, not the client's connection"


def test_container_refuses_attach_with_its_error(net: Net, peer_edge: tuple) -> None:
    peer, edge = peer_edge
    peer.refuse = Condition("amqp:unauthorized-access", "not for you")
    snd = net.connect(edge.url).sender("lr.refused")
    net.wait(lambda: snd.remote_closed, 10, "the refusal at the client")
    cond = snd.remote_condition
    assert cond is not None and cond.name == "amqp:unauthorized-access", cond
    assert cond.description == "not for you"


def test_container_ends_session_detaches_client_links(net: Net, peer_edge: tuple) -> None:
    """A container may end the session carrying routed links (RabbitMQ does so for a missing
    queue): every client link on it must be detached with an error, and later attaches routed."""
    peer, edge = peer_edge
    client = net.connect(edge.url)
    snd = client.sender("lr.s1")
    rcv = client.receiver("lr.s2")
    plink = peer.wait_link("lr.s1")
    peer.wait_link("lr.s2")
    plink.end_session("amqp:not-found", "no queue 's1'")
    net.wait(lambda: snd.remote_closed and rcv.remote_closed, 10,
             f"both client links detached (sender {snd.remote_closed}, receiver {rcv.remote_closed})")
    assert snd.remote_condition is not None and rcv.remote_condition is not None
    again = client.sender("lr.s3")
    net.wait(lambda: again.remote_opened or again.remote_closed, 10, "a new attach to be answered")
    assert again.remote_opened and not again.remote_closed, again.remote_condition
    new_session = peer.wait_link("lr.s3").link.session
    assert new_session.state & Endpoint.LOCAL_ACTIVE, "the new link must be on a live session"


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_client_detach_reaches_container(net: Net, peer_edge: tuple, kind: str) -> None:
    peer, edge = peer_edge
    client = net.connect(edge.url)
    link = client.sender("lr.bye") if kind == "sender" else client.receiver("lr.bye")
    plink = peer.wait_link("lr.bye")
    link.link.condition = Condition("app:done", "client finished")
    link.close()
    net.wait(lambda: plink.closed, 10, "the detach at the container")
    assert plink.condition is not None and plink.condition.name == "app:done", plink.condition
    net.wait(lambda: link.remote_closed, 10, "the detach to be answered")


def test_client_connection_close_detaches_at_container(net: Net, peer_edge: tuple) -> None:
    peer, edge = peer_edge
    client = net.connect(edge.url)
    client.receiver("lr.gone")
    plink = peer.wait_link("lr.gone")
    client.close()
    net.wait(lambda: plink.closed, 10, "the routed link's detach after the client left")


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_peer_connection_lost_detaches_client_with_error(net: Net, peer_edge: tuple, kind: str) -> None:
    peer, edge = peer_edge
    client = net.connect(edge.url)
    link = client.sender("lr.lost") if kind == "sender" else client.receiver("lr.lost")
    peer.wait_link("lr.lost")
    if kind == "sender":
        link.send(msg("in flight"))
    peer.drop_connections()
    net.wait(lambda: link.remote_closed, 10, "the client's link to be detached")
    assert link.remote_condition is not None, "detached without an error condition"
    assert client.alive


def test_container_router_killed_detaches_client_links(edge: Router, container: Router, net: Net) -> None:
    client = net.connect(edge.url)
    snd = client.sender("lr.killed")
    rcv = client.receiver("lr.killed")
    assert snd.remote_opened and rcv.remote_opened
    tag = snd.send(msg("unsettled"))
    container.terminate(signal.SIGKILL)
    net.wait(lambda: snd.remote_closed and rcv.remote_closed, 10, "both routed links detached")
    for link in (snd, rcv):
        assert link.remote_condition is not None, "detached without an error condition"
    assert tag not in snd.outcomes or snd.outcomes[tag].state != 36, "cannot be accepted: container died"
    assert client.alive
    wait_for(lambda: (set(statuses(edge).values()) == {"inactive"}, statuses(edge)), 10,
             "link routes inactive after the container died")
    # A new attach is now refused, not left hanging.
    late = client.receiver("lr.killed")
    net.wait(lambda: late.remote_closed, 10, "the refusal")
    assert late.remote_condition is not None and late.remote_condition.name == NO_ROUTE


@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_no_container_refused_no_route(net: Net, edge_factory: EdgeFactory, kind: str) -> None:
    edge = edge_factory(both_ways("lr", connection="nowhere"))
    assert statuses(edge) == {("lr", "in"): "inactive", ("lr", "out"): "inactive"}
    client = net.connect(edge.url)
    link = client.sender("lr.x") if kind == "sender" else client.receiver("lr.x")
    net.wait(lambda: link.remote_closed, 5, "the refusal")
    cond = link.remote_condition
    assert cond is not None and cond.name == NO_ROUTE, cond
    assert cond.description == "No route to the destination node", cond.description
    assert client.alive, "the refusal ends the link only"


def test_connector_down_then_container_appears(net: Net, router_factory, edge_factory: EdgeFactory
                                               ) -> None:  # type: ignore[no-untyped-def]
    """Connector to a port with nothing behind it: refused; once a container is there, routed."""
    port = free_port()
    edge = edge_factory(both_ways("lr", connection="cont"), {"cont": port})
    client = net.connect(edge.url)
    refused = client.sender("lr.later")
    net.wait(lambda: refused.remote_closed, 5, "the refusal")
    assert refused.remote_condition is not None and refused.remote_condition.name == NO_ROUTE
    peer = Peer(net, port=port)   # the connector retries (2, 4, 8 s back-off)
    net.wait(lambda: bool(peer.connections), 30, "the connector to reach the new container")
    wait_active(edge, 2, net=net)
    snd = client.sender("lr.later")
    plink = peer.wait_link("lr.later")
    assert snd.remote_opened and not snd.remote_closed, snd.remote_condition
    snd.send(msg("now"))
    net.wait(lambda: len(plink.messages) == 1, 10, "the message at the container")
