"""Edge routers across implementations: a qdmesh edge router on a C interior router
(qdrouterd 1.19), and a C edge router on a qdmesh interior router; unsettled messages in
both directions, multicast once per receiver, and a reply to a dynamic address on an edge."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from proton import Message

from tests.edge.edgeproc import edge as qd_edge
from tests.edge.edgeproc import interior as qd_interior
from tests.edge.helpers import bodies, send_until_accepted, wait_edges
from tests.interop.cpeer import section
from tests.router.routerproc import free_port

MULTICAST = section("address", {"prefix": "multicast", "distribution": "multicast"})


def _exchange(net, sender_url: str, receiver_url: str, address: str) -> None:
    receiver = net.connect(receiver_url).receiver(address)
    sender = net.connect(sender_url).sender(address)
    send_until_accepted(net, sender, "probe", timeout=20)
    tags = [sender.send(Message(body=f"m{i}")) for i in range(20)]
    net.wait(lambda: all(t in sender.outcomes for t in tags), 15, "outcomes")
    assert {sender.outcomes[t].name for t in tags} == {"accepted"}
    assert bodies(receiver)[-20:] == [f"m{i}" for i in range(20)]


def test_qdmesh_edge_on_c_interior(c_router, tmp_path: Path, net, router_factory):
    edge_port = free_port()
    interior = c_router("CI", sections=section("listener", {
        "host": "127.0.0.1", "port": edge_port, "role": "edge", "saslMechanisms": "ANONYMOUS",
        "authenticatePeer": "no"}) + MULTICAST)
    workdir = tmp_path / "E1"
    workdir.mkdir()
    e1 = qd_edge(workdir, "E1", [edge_port])
    e1.start()
    try:
        _exchange(net, interior.url, e1.url, "closest/in")   # C interior -> qdmesh edge
        _exchange(net, e1.url, interior.url, "closest/out")  # qdmesh edge -> C interior
        # multicast: one receiver on each side, each gets every message once
        r_edge = net.connect(e1.url).receiver("multicast/news")
        r_int = net.connect(interior.url).receiver("multicast/news")
        sender = net.connect(e1.url).sender("multicast/news")
        deadline = time.monotonic() + 15
        while not (r_edge.received and r_int.received) and time.monotonic() < deadline:
            sender.send(Message(body="probe"))
            net.pump(0.3)
        before_edge, before_int = len(r_edge.received), len(r_int.received)
        for i in range(10):
            sender.send(Message(body=i))
        net.wait(lambda: len(r_int.received) >= before_int + 10 and len(r_edge.received) >= before_edge + 10,
                 15, "multicast copies")
        net.pump(0.5)
        assert [b for b in bodies(r_edge) if b != "probe"] == list(range(10))
        assert [b for b in bodies(r_int) if b != "probe"] == list(range(10))
        # request/response: a client on the edge with a dynamic reply-to, a service on C
        _request_response(net, client_url=e1.url, service_url=interior.url)
        # the C interior lists the qdmesh edge, and its qdstat reaches the edge's agent
        tools = interior.binary.parent
        edges = _run([str(tools / "qdstat-c"), "-b", interior.url, "--edge"])
        assert any(" E1 " in f" {line} " for line in edges.splitlines()), edges
        general = _run([str(tools / "qdstat-c"), "-b", interior.url, "-d", "E1", "-g"])
        assert "E1" in general and "edge" in general, general
    finally:
        e1.stop(check=True)


def test_c_edge_on_qdmesh_interior(c_router, tmp_path: Path, net):
    workdir = tmp_path / "I1"
    workdir.mkdir()
    interior = qd_interior(workdir, "I1")
    interior.start()
    try:
        c_edge = c_router("CE", mode="edge", sections=section("connector", {
            "host": "127.0.0.1", "port": interior.ports["edge"], "role": "edge",
            "saslMechanisms": "ANONYMOUS"}) + MULTICAST)
        wait_edges(interior, 1)
        _exchange(net, interior.url, c_edge.url, "closest/in")
        _exchange(net, c_edge.url, interior.url, "closest/out")
        _request_response(net, client_url=c_edge.url, service_url=interior.url)
        _multicast_once(net, sender_url=c_edge.url, receiver_urls=[c_edge.url, c_edge.url, interior.url])
        _multicast_once(net, sender_url=interior.url, receiver_urls=[c_edge.url, interior.url],
                        address="multicast/down")
        # qdrouterd's own tools on the qdmesh interior: its edges, and the C edge's agent
        # through it; and qdmesh's qdstat to the C edge's agent
        tools = c_edge.binary.parent
        edges = _run([str(tools / "qdstat-c"), "-b", interior.url, "--edge"])
        assert any(" CE " in f" {line} " and "edge" in line for line in edges.splitlines()), edges
        assert "CE" in _run([str(tools / "qdstat-c"), "-b", interior.url, "-d", "CE", "-g"])
        assert "CE" in _run([sys.executable, "-m", "qdrouter.tools.qdstat", "-b", interior.url,
                             "-d", "CE", "-g"])
    finally:
        interior.stop(check=True)


def _run(command) -> str:
    from tests.router.routerproc import router_env
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, env=router_env())
    assert done.returncode == 0, done.stderr
    return done.stdout


def _multicast_once(net, sender_url: str, receiver_urls, address: str = "multicast/up") -> None:
    receivers = [net.connect(url).receiver(address) for url in receiver_urls]
    sender = net.connect(sender_url).sender(address)
    deadline = time.monotonic() + 20
    while not all(r.received for r in receivers) and time.monotonic() < deadline:
        sender.send(Message(body="probe"))
        net.pump(0.3)
    assert all(r.received for r in receivers), "multicast did not reach every receiver"
    net.pump(0.5)
    for r in receivers:
        r.received.clear()
    for i in range(20):
        sender.send(Message(body=i))
    net.wait(lambda: all(len(r.received) >= 20 for r in receivers), 15, "20 copies each")
    net.pump(1.0)
    for r in receivers:
        assert bodies(r) == list(range(20))


def _request_response(net, client_url: str, service_url: str) -> None:
    service_client = net.connect(service_url)
    requests = service_client.receiver("closest/service")
    replies_out = service_client.sender(None)
    client = net.connect(client_url)
    reply_to = client.receiver(None, dynamic=True)
    net.wait(lambda: reply_to.address, 10, "a dynamic address")
    ask = client.sender("closest/service")
    deadline = time.monotonic() + 20
    answered = False
    while not answered and time.monotonic() < deadline:
        ask.send(Message(body="ping", reply_to=reply_to.address))
        net.pump(0.3)
        for got in list(requests.received):
            replies_out.send(Message(address=got.message.reply_to, body="pong"))
        requests.received.clear()
        net.pump(0.3)
        answered = "pong" in bodies(reply_to)
    assert answered, f"no reply at {reply_to.address}"


def _routed_attach(net, client, address: str) -> bool:
    from tests.router.amqpclient import WaitTimeout
    sender = client.sender(address)
    try:
        net.wait(lambda: sender.credit > 0 or sender.remote_closed, 2, "credit through the route")
    except WaitTimeout:
        pass
    if sender.credit <= 0:
        sender.close()
        return False
    tag = sender.send(Message(body="routed"))
    net.wait(lambda: tag in sender.outcomes, 10, "outcome")
    return sender.outcomes[tag].name == "accepted"


def test_link_route_lookup_both_ways(c_router, tmp_path: Path, net, router_factory):
    """A C edge asks a qdmesh interior (address-lookup server), a qdmesh edge asks a C
    interior (client): both pass a client's attach up to the broker's link route."""
    from tests.edge.helpers import wait_until
    broker = router_factory(router_id="B")
    routes = ("linkRoute {\n    prefix: lr\n    direction: in\n    connection: broker\n}\n"
              "linkRoute {\n    prefix: lr\n    direction: out\n    connection: broker\n}\n"
              "connector {\n    name: broker\n    host: 127.0.0.1\n"
              f"    port: {broker.port}\n    role: route-container\n}}\n")
    on_broker = net.connect(broker.url).receiver("lr.q")
    workdir = tmp_path / "I1"
    workdir.mkdir()
    interior = qd_interior(workdir, "I1", extra=routes)
    interior.start()
    try:
        c_edge = c_router("CE", mode="edge", sections=section("connector", {
            "host": "127.0.0.1", "port": interior.ports["edge"], "role": "edge",
            "saslMechanisms": "ANONYMOUS"}))
        wait_edges(interior, 1)
        client = net.connect(c_edge.url)
        wait_until(lambda: _routed_attach(net, client, "lr.q"), timeout=20, what="C edge -> qdmesh route")
    finally:
        interior.stop(check=True)
    edge_port = free_port()
    c_int = c_router("CI", sections=section("listener", {
        "host": "127.0.0.1", "port": edge_port, "role": "edge", "saslMechanisms": "ANONYMOUS",
        "authenticatePeer": "no"}) + routes)
    workdir = tmp_path / "E1"
    workdir.mkdir()
    e1 = qd_edge(workdir, "E1", [edge_port])
    e1.start()
    try:
        client = net.connect(e1.url)
        wait_until(lambda: _routed_attach(net, client, "lr.q"), timeout=20, what="qdmesh edge -> C route")
        assert bodies(on_broker).count("routed") == 2
    finally:
        e1.stop(check=True)
        c_int.stop()
