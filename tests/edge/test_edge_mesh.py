"""Edges on different interior routers of a mesh: every distribution, and replies to an
edge client's dynamic address from the other side of the mesh."""

from __future__ import annotations

import time

from proton import Message

from tests.edge.helpers import bodies, send_until_accepted, wait_edges, wait_until
from tests.router.amqpclient import ACCEPTED


def _mesh(routers):
    i1 = routers.interior("I1")
    i2 = routers.interior("I2", connect_to=[i1.ports["mesh"]])
    e1 = routers.edge("E1", [i1.ports["edge"]])
    e2 = routers.edge("E2", [i2.ports["edge"]])
    wait_edges(i1, 1)
    wait_edges(i2, 1)
    return i1, i2, e1, e2


def test_closest_and_balanced_across_the_mesh(routers, net):
    _, _, e1, e2 = _mesh(routers)
    for address in ("closest/a", "balanced/b"):
        receiver = net.connect(e2.url).receiver(address)
        sender = net.connect(e1.url).sender(address)
        send_until_accepted(net, sender, "probe", timeout=20)
        tags = [sender.send(Message(body=i)) for i in range(100)]
        net.wait(lambda s=sender, ts=tags: all(t in s.outcomes for t in ts), 15, f"outcomes on {address}")
        assert all(sender.outcomes[t].state == ACCEPTED for t in tags)
        assert [b for b in bodies(receiver) if b != "probe"] == list(range(100))


def test_multicast_once_per_receiver_across_edges_and_interiors(routers, net):
    i1, i2, e1, e2 = _mesh(routers)
    receivers = [net.connect(url).receiver("multicast/feed")
                 for url in (e1.url, e1.url, e2.url, i1.url, i2.url)]
    sender = net.connect(e1.url).sender("multicast/feed")
    deadline = time.monotonic() + 20
    while not all(r.received for r in receivers) and time.monotonic() < deadline:
        sender.send(Message(body="probe"))
        net.pump(0.3)
    assert all(r.received for r in receivers), "multicast did not reach every receiver"
    for i in range(30):
        sender.send(Message(body=i))
    # Probes still on their way may arrive among these: only the numbered messages count.
    net.wait(lambda: all(len(_numbered(r)) >= 30 for r in receivers), 15, "30 copies each")
    net.pump(1.0)  # a duplicate would arrive by now
    for r in receivers:
        assert _numbered(r) == list(range(30))


def test_request_response_between_edges_on_different_interiors(routers, net):
    _, i2, e1, e2 = _mesh(routers)
    service = net.connect(e2.url)
    requests = service.receiver("closest/svc")
    responder = service.sender(None)
    client = net.connect(e1.url)
    replies = client.receiver(None, dynamic=True)
    net.wait(lambda: replies.address, 10, "dynamic address")
    # qdrouterd writes the scheme ("amqp:/_edge/E1/temp.X"), qdmesh does not: one address.
    assert replies.address.removeprefix("amqp:/").startswith("_edge/E1/temp.")
    ask = client.sender("closest/svc")
    send_until_accepted(net, ask, "hello", timeout=20)
    for i in range(10):
        ask.send(Message(body=i, reply_to=replies.address, correlation_id=i))
    net.wait(lambda: len([r for r in requests.received if r.message.reply_to]) >= 10, 10, "requests")
    # the interior advertises the edge to the mesh as qdrouterd does ("H<edge id>"): the
    # replies have a route once I2 has heard of it
    # (the loop runs meanwhile: the clients' connections must not fall silent)
    wait_until(lambda: any(str(row.get("key")) == "HE1" for row in _addresses(i2)), what="HE1 on I2",
               net=net)
    for got in requests.received:
        if got.message.reply_to:
            responder.send(Message(address=got.message.reply_to, body=got.message.body * 10,
                                   correlation_id=got.message.correlation_id))
    net.wait(lambda: len(replies.received) >= 10, 10, "replies across the mesh")
    assert sorted(bodies(replies)) == [i * 10 for i in range(10)]
    net.wait(responder.all_settled, 10, "the replies' outcomes")
    assert responder.outcome_counts() == {"accepted": 10}


def _numbered(receiver):
    return [b for b in bodies(receiver) if b != "probe"]


def _addresses(router):
    from tests.edge.helpers import ADDRESS, query
    return query(router, ADDRESS)
