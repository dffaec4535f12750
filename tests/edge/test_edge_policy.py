"""Policy across the edge: the global maxMessageSize of an interior router applies to what
its edge routers send it (as the reference defines), not to what the edge keeps local."""

from __future__ import annotations

import pytest
from proton import Message

from tests.edge.helpers import send_until_accepted, wait_edges
from tests.router.amqpclient import ACCEPTED, REJECTED

POLICY = "policy {\n    maxConnections: 100\n    maxMessageSize: 2000\n}\n"


@pytest.mark.c_router_bug("qdrouterd 1.19's schema says the global maxMessageSize applies to transfers from "
                          "edge routers to interiors, but it accepted a 5000-byte message over a 2000 limit: "
                          "qd_connection_max_message_size (server.c) reads only a vhost-policed connection's "
                          "settings, which an edge connection without enableVhostPolicy never has")
def test_interior_max_message_size_applies_to_edges(routers, net):
    interior = routers.interior("I1", extra=POLICY)
    edge = routers.edge("E1", [interior.ports["edge"]])
    wait_edges(interior, 1)
    remote = net.connect(interior.url).receiver("closest/big")
    sender = net.connect(edge.url).sender("closest/big")
    send_until_accepted(net, sender, "small")
    big = sender.send(Message(body="x" * 5000))
    net.wait(lambda: big in sender.outcomes, 10, "the big message's outcome")
    assert sender.outcomes[big].state == REJECTED
    assert [r.message.body for r in remote.received] == ["small"]
    # the same size between two clients of the edge never reaches the interior's policy
    local = net.connect(edge.url).receiver("closest/local")
    local_sender = net.connect(edge.url).sender("closest/local")
    net.wait(lambda: local_sender.credit > 0, 10, "credit")
    tag = local_sender.send(Message(body="y" * 5000))
    net.wait(lambda: tag in local_sender.outcomes, 10, "outcome")
    assert local_sender.outcomes[tag].state == ACCEPTED
    assert len(local.received) == 1
