"""Messages across edge routers: clients on edges reach each other through their interior
router, and clients of one edge talk without leaving it."""

from __future__ import annotations

from proton import Message

from tests.edge.helpers import bodies, edge_connections, send_until_accepted, wait_edges
from tests.router.amqpclient import ACCEPTED


def test_edge_to_edge_unsettled_through_interior(routers, net):
    interior = routers.interior("I1")
    e1 = routers.edge("E1", [interior.ports["edge"]])
    e2 = routers.edge("E2", [interior.ports["edge"]])
    wait_edges(interior, 2)
    rows = edge_connections(interior)
    assert {row["container"] for row in rows} == {"E1", "E2"}
    receiver = net.connect(e1.url).receiver("closest/work")
    sender = net.connect(e2.url).sender("closest/work")
    send_until_accepted(net, sender, "first")
    for i in range(50):
        sender.send(Message(body=f"m{i}"))
    net.wait(lambda: sender.all_settled(), 15, "outcomes of 50 messages")
    assert sender.outcome_counts().get("accepted") == sender.settled_count()
    assert [b for b in bodies(receiver) if b != "first"][-50:] == [f"m{i}" for i in range(50)]


def test_clients_of_one_edge_talk_without_the_interior(routers, net):
    interior = routers.interior("I1")
    e1 = routers.edge("E1", [interior.ports["edge"]])
    wait_edges(interior, 1)
    receiver = net.connect(e1.url).receiver("balanced/local")
    sender = net.connect(e1.url).sender("balanced/local")
    net.wait(lambda: sender.credit > 0, 10, "credit for a local consumer")
    tags = [sender.send(Message(body=i)) for i in range(20)]
    net.wait(lambda: sender.all_settled(), 10, "outcomes")
    assert all(sender.outcomes[t].state == ACCEPTED for t in tags)
    assert bodies(receiver) == list(range(20))
    routers.stop(interior)  # the edge alone still serves its own clients
    tags = [sender.send(Message(body=100 + i)) for i in range(5)]
    net.wait(lambda: sender.all_settled(), 10, "outcomes without the interior")
    assert bodies(receiver)[-5:] == [100 + i for i in range(5)]
