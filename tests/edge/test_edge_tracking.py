"""Address tracking: an edge router sends to its interior only what has a consumer
somewhere, and its producers get credit when one appears; many receivers on one edge."""

from __future__ import annotations

from proton import Message

from tests.edge.helpers import wait_edges
from tests.router.amqpclient import ACCEPTED


def test_producer_on_edge_gets_credit_only_when_a_consumer_exists(routers, net):
    interior = routers.interior("I1")
    e1 = routers.edge("E1", [interior.ports["edge"]])
    e2 = routers.edge("E2", [interior.ports["edge"]])
    wait_edges(interior, 2)
    sender = net.connect(e1.url).sender("balanced/nobody-yet")
    net.pump(1.0)
    assert sender.credit == 0, "credit for an address nobody consumes"
    receiver = net.connect(e2.url).receiver("balanced/nobody-yet")
    net.wait(lambda: sender.credit > 0, 10, "credit once a consumer exists on another edge")
    tag = sender.send(Message(body="now"))
    net.wait(lambda: tag in sender.outcomes, 10, "outcome")
    assert sender.outcomes[tag].state == ACCEPTED
    assert [r.message.body for r in receiver.received] == ["now"]
    receiver.link.close()
    net.wait(lambda: receiver.remote_closed, 10, "receiver detached")
    # the consumer went: the interior tells the edge, which stops granting credit
    net.pump(1.0)
    credit_left = sender.credit
    tags = [sender.send(Message(body=i)) for i in range(credit_left + 3)]
    net.pump(1.5)
    assert sum(1 for t in tags if t in sender.outcomes and sender.outcomes[t].state == ACCEPTED) == 0


def test_two_hundred_receivers_on_one_edge(routers, net):
    interior = routers.interior("I1")
    edge = routers.edge("E1", [interior.ports["edge"]])
    wait_edges(interior, 1)
    client = net.connect(edge.url)
    receivers = [client.receiver(f"closest/r{i}", wait=False) for i in range(200)]
    net.wait(lambda: all(r.remote_opened for r in receivers), 20, "200 attaches")
    sender = net.connect(interior.url).sender(None)
    tags = {}
    deadline_rounds = 40
    pending = set(range(200))
    while pending and deadline_rounds:
        deadline_rounds -= 1
        for i in sorted(pending):
            msg = Message(address=f"closest/r{i}", body=i)
            tags[sender.send(msg)] = i
        net.wait(lambda ts=tags: all(t in sender.outcomes for t in ts), 20, "outcomes")
        pending = {i for t, i in tags.items() if sender.outcomes[t].state != ACCEPTED}
        tags = {}
        net.pump(0.2)
    assert not pending, f"{len(pending)} addresses never reached"
    for i, r in enumerate(receivers):
        assert i in [got.message.body for got in r.received]


def test_hundred_multicast_receivers_on_one_edge_each_get_one_copy(routers, net):
    interior = routers.interior("I1")
    edge = routers.edge("E1", [interior.ports["edge"]])
    wait_edges(interior, 1)
    client = net.connect(edge.url)
    receivers = [client.receiver("multicast/wide", wait=False) for _ in range(100)]
    net.wait(lambda: all(r.remote_opened for r in receivers), 20, "100 attaches")
    sender = net.connect(interior.url).sender("multicast/wide")
    import time
    deadline = time.monotonic() + 20
    while not all(r.received for r in receivers) and time.monotonic() < deadline:
        sender.send(Message(body="probe"))
        net.pump(0.3)
    assert all(r.received for r in receivers)
    net.pump(0.5)
    for r in receivers:
        r.received.clear()
    for i in range(10):
        sender.send(Message(body=i))
    net.wait(lambda: all(len(r.received) >= 10 for r in receivers), 20, "10 copies each")
    net.pump(1.0)
    assert all([got.message.body for got in r.received] == list(range(10)) for r in receivers)
    # the interior sent each message over the edge connection once, not once per receiver
    from tests.edge.helpers import query
    links = [row for row in query(interior, "org.apache.qpid.dispatch.router.link")
             if row.get("owningAddr") == "M0multicast/wide" and row.get("linkDir") == "out"]
    assert len(links) == 1
