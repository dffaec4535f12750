"""Every outcome a consumer gives travels back over three routers to the sender."""

from __future__ import annotations

from proton import Condition

from tests.mesh.conftest import LINE3, MeshFactory
from tests.mesh.traffic import wait_received, wait_remote
from tests.router.amqpclient import ACCEPTED, MODIFIED, REJECTED, RELEASED, Net, msg
from tests.router.delivery_states import EXPECTED, exchange


def test_outcomes_across_three_hops(mesh_factory: MeshFactory, net: Net) -> None:
    mesh = mesh_factory(LINE3)
    addr = "closest/outcomes"
    rcv = net.connect(mesh["C"].url).receiver(addr, settle=None)
    wait_remote(mesh, "A", addr, 1, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    tags = [snd.send(msg(name)) for name in ("accept", "reject", "release", "modify")]
    wait_received(net, [rcv], 4)
    assert rcv.bodies() == ["accept", "reject", "release", "modify"]
    rcv.settle_unsettled(ACCEPTED, count=1)
    rcv.settle_unsettled(REJECTED, count=1,
                         condition=Condition("amqp:precondition-failed", "bad order 42", {"k": "v"}))
    rcv.settle_unsettled(RELEASED, count=1)
    rcv.settle_unsettled(MODIFIED, count=1, failed=True, undeliverable=True)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "the four outcomes at the sender")
    accepted, rejected, released, modified = (snd.outcomes[t] for t in tags)
    assert accepted.state == ACCEPTED
    assert rejected.state == REJECTED
    assert rejected.condition is not None, "rejected outcome lost its error condition on the way"
    assert rejected.condition.name == "amqp:precondition-failed"
    assert rejected.condition.description == "bad order 42"
    assert released.state == RELEASED
    assert modified.state == MODIFIED
    assert (modified.failed, modified.undeliverable) == (True, True)


def test_received_and_custom_states_across_three_hops(mesh_factory: MeshFactory, net: Net) -> None:
    """A consumer's Received(section 3, offset 7), then an outcome of its own with its fields,
    reach a sender two routers away."""
    mesh = mesh_factory(LINE3)
    addr = "closest/states"
    rcv = net.connect(mesh["C"].url).receiver(addr, settle=None)
    wait_remote(mesh, "A", addr, 1, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    tags = [snd.send(msg(n)) for n in range(3)]
    wait_received(net, [rcv], 3)
    assert exchange(net, rcv, snd, tags) == [EXPECTED] * 3
