"""A peer on an edge listener that speaks the edge protocol badly is refused message by
message; the interior router serves on."""

from __future__ import annotations

from proton import Message

from tests.edge.helpers import send_until_accepted, wait_edges
from tests.router.amqpclient import REJECTED


def test_malformed_lookups_are_rejected_and_the_router_serves_on(routers, net):
    interior = routers.interior("I1")
    fake_edge = net.connect(interior.urls["edge"])  # a client on the edge listener
    lookup = fake_edge.sender("_$qd.addr_lookup")
    net.wait(lambda: lookup.credit > 0, 10, "credit from the lookup server")
    bad = [Message(body="not a list"),
           Message(body=["a"], reply_to="x", properties={"version": 1, "opcode": 1}),
           Message(body=["a", True], properties={"version": 9, "opcode": 1}, reply_to="x"),
           Message(body=[1, 2], properties={"version": 1, "opcode": 1}, reply_to="x")]
    tags = [lookup.send(m) for m in bad]
    tags.append(lookup.send_raw(b"\x00\x53\x77\xa1"))  # truncated amqp-value
    net.wait(lambda: all(t in lookup.outcomes for t in tags), 10, "outcomes")
    assert all(lookup.outcomes[t].state == REJECTED for t in tags), lookup.outcome_counts()
    # a real edge still attaches and works
    edge = routers.edge("E1", [interior.ports["edge"]])
    wait_edges(interior, 2)
    receiver = net.connect(interior.url).receiver("closest/ok")
    send_until_accepted(net, net.connect(edge.url).sender("closest/ok"), "still serving")
    assert [r.message.body for r in receiver.received] == ["still serving"]
