"""A link route declared on the interior mesh is usable from an edge router's clients: the
edge asks its interior (address lookup, as qdrouterd's edge does) and passes the attach up.
A standalone qdmesh router stands in for the broker."""

from __future__ import annotations

from proton import Message

from tests.edge.helpers import bodies, wait_edges, wait_until
from tests.router.amqpclient import WaitTimeout

ROUTES = ("linkRoute {\n    prefix: lr\n    direction: in\n    connection: broker\n}\n"
          "linkRoute {\n    prefix: lr\n    direction: out\n    connection: broker\n}\n")


def _broker_connector(port: int) -> str:
    return ("connector {\n    name: broker\n    host: 127.0.0.1\n"
            f"    port: {port}\n    role: route-container\n}}\n")


def test_edge_client_uses_a_link_route_of_the_mesh(routers, router_factory, net):
    broker = router_factory(router_id="B")
    i1 = routers.interior("I1", extra=_broker_connector(broker.port) + ROUTES)
    i2 = routers.interior("I2", connect_to=[i1.ports["mesh"]])
    edge = routers.edge("E1", [i2.ports["edge"]])  # the route is on the other interior
    wait_edges(i2, 1)
    on_broker = net.connect(broker.url).receiver("lr.q")
    client = net.connect(edge.url)

    def routed_send() -> bool:
        sender = client.sender("lr.q")
        try:  # until the mesh has told the edge's interior of the route, the edge serves it
            net.wait(lambda: sender.credit > 0 or sender.remote_closed, 2, "credit through the link route")
        except WaitTimeout:
            pass
        if sender.credit <= 0:
            sender.close()
            return False
        tag = sender.send(Message(body="through the route"))
        net.wait(lambda: tag in sender.outcomes, 10, "outcome")
        return sender.outcomes[tag].name == "accepted"

    wait_until(routed_send, timeout=20, what="an attach routed from the edge to the broker")
    assert "through the route" in bodies(on_broker)
    # the broker's messages reach a receiver attached on the edge through the route too
    receiver = client.receiver("lr.r")
    from_broker = net.connect(broker.url).sender("lr.r")
    net.wait(lambda: from_broker.credit > 0, 10, "the edge receiver's credit at the broker")
    tag = from_broker.send(Message(body="back"))
    net.wait(lambda: tag in from_broker.outcomes, 10, "outcome at the broker")
    assert bodies(receiver) == ["back"]
    # and an address that is not link-routed stays the edge's own
    local_r = client.receiver("closest/plain")
    local_s = net.connect(edge.url).sender("closest/plain")
    net.wait(lambda: local_s.credit > 0, 10, "credit for a plain address")
    assert local_r.remote_opened
