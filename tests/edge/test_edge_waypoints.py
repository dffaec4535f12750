"""A broker attached to an edge router with auto-links serves the whole network: a
waypoint address's phases cross the edge connection with qdrouterd's qd.waypoint.N
capabilities. (A standalone qdmesh router stands in for the broker: what its auto-link
sends in comes back out of it.)"""

from __future__ import annotations

from proton import Message

from tests.edge.helpers import bodies, send_until_accepted, wait_edges

WAYPOINT = "address {\n    prefix: queue\n    waypoint: yes\n}\n"


def test_broker_on_an_edge_serves_the_network(routers, router_factory, net):
    broker = router_factory(router_id="B")
    interior = routers.interior("I1", extra=WAYPOINT)
    edge = routers.edge("E1", [interior.ports["edge"]], extra=WAYPOINT + (
        "connector {\n    name: broker\n    host: 127.0.0.1\n"
        f"    port: {broker.port}\n    role: route-container\n}}\n"
        "autoLink {\n    address: queue.w\n    direction: out\n    connection: broker\n}\n"
        "autoLink {\n    address: queue.w\n    direction: in\n    connection: broker\n}\n"))
    wait_edges(interior, 1)
    receiver = net.connect(interior.url).receiver("queue.w")
    sender = net.connect(interior.url).sender("queue.w")
    send_until_accepted(net, sender, "probe", timeout=20)
    tags = [sender.send(Message(body=i)) for i in range(20)]
    net.wait(lambda: all(t in sender.outcomes for t in tags), 15, "outcomes")
    assert {sender.outcomes[t].name for t in tags} == {"accepted"}
    net.wait(lambda: len(bodies(receiver)) >= 21, 10, "messages back from the broker")
    assert bodies(receiver)[-20:] == list(range(20))
    # a client of the edge itself reaches the broker the same way
    local = net.connect(edge.url).sender("queue.w")
    send_until_accepted(net, local, "from the edge")
    net.wait(lambda: "from the edge" in bodies(receiver), 10, "the edge client's message")
