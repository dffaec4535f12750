"""Messages crossing a line of three routers take the hand-offs of amqp/data_path/mesh_handoff.py: the
middle router passes them to the router beyond (transit), the last one hands them to a
consumer on a listener that strips router annotations (qdrouterd's default, and the common
case). Outcomes, order, annotations and counters are as the general path gives them. (The
other mesh tests' listeners keep the annotations so they can read the trace.)"""

from __future__ import annotations

from proton import Condition, symbol

from tests.mesh.conftest import LINE3, MeshFactory
from tests.mesh.meshproc import section
from tests.mesh.traffic import wait_received, wait_remote
from tests.router.amqpclient import ACCEPTED, MODIFIED, REJECTED, RELEASED, Net, msg
from tests.router.routerproc import free_port


def _stripping_listener(port: int) -> str:
    return section("listener", {"name": "clients", "host": "127.0.0.1", "port": port,
                                "saslMechanisms": "ANONYMOUS"})


def test_egress_to_a_stripping_consumer(mesh_factory: MeshFactory, net: Net) -> None:
    port = free_port()
    mesh = mesh_factory(LINE3, extra={"C": _stripping_listener(port)})
    addr = "closest/egress"
    rcv = net.connect(f"amqp://127.0.0.1:{port}").receiver(addr, settle=None)
    wait_remote(mesh, "A", addr, 1, net=net)
    client = net.connect(mesh["A"].url)
    snd = client.sender(addr)
    user = {symbol("app.key"): "kept"}
    tags = [snd.send(msg(name, annotations=user)) for name in ("accept", "reject", "release", "modify")]
    pre = client.sender(addr, presettled=True)
    for index in range(20):
        pre.send(msg(index))
    wait_received(net, [rcv], 24)
    unsettled = [r.message.body for r in rcv.received if not r.arrived_settled]
    presettled = [r.message.body for r in rcv.received if r.arrived_settled]
    # Each sender's messages in order; the pre-settled ones stay pre-settled.
    assert unsettled == ["accept", "reject", "release", "modify"]
    assert presettled == list(range(20))
    for received in rcv.received:
        annotations = {str(k): v for k, v in (received.message.annotations or {}).items()}
        # The router's own annotations stay inside the mesh; the sender's are delivered.
        assert not any(key.startswith("x-opt-qd.") for key in annotations), annotations
    first = next(r for r in rcv.received if r.message.body == "accept")
    assert {str(k): v for k, v in first.message.annotations.items()} == {"app.key": "kept"}
    rcv.settle_unsettled(ACCEPTED, count=1)
    rcv.settle_unsettled(REJECTED, count=1, condition=Condition("amqp:precondition-failed", "no"))
    rcv.settle_unsettled(RELEASED, count=1)
    rcv.settle_unsettled(MODIFIED, count=1, failed=True, undeliverable=True)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "the four outcomes at the sender")
    outcomes = [snd.outcomes[t] for t in tags]
    assert [o.state for o in outcomes] == [ACCEPTED, REJECTED, RELEASED, MODIFIED]
    assert outcomes[1].condition is not None and outcomes[1].condition.description == "no"
    # Entering the mesh at A, passing B, leaving at C: each message counted once at each.
    for name, expected in (("A", (24, 24, 0)), ("B", (0, 24, 0)), ("C", (0, 0, 24))):
        row = next(r for r in mesh.mgmt(name).query("org.apache.qpid.dispatch.router.address")
                   if r["key"] == f"M0{addr}")
        counts = (row["deliveriesIngress"], row["deliveriesTransit"], row["deliveriesEgress"])
        assert counts == expected, (name, counts)


def test_egress_consumer_gone_with_unsettled_deliveries(mesh_factory: MeshFactory, net: Net) -> None:
    # Messages the egress router handed on, unsettled, when the consumer disconnects: the
    # sender three routers away learns an outcome for every one.
    port = free_port()
    mesh = mesh_factory(LINE3, extra={"C": _stripping_listener(port)})
    addr = "closest/egress-gone"
    consumer = net.connect(f"amqp://127.0.0.1:{port}")
    rcv = consumer.receiver(addr, settle=None)
    wait_remote(mesh, "A", addr, 1, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    tags = [snd.send(msg(index)) for index in range(10)]
    wait_received(net, [rcv], 10)
    consumer.close()
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "an outcome for every message")
    assert {snd.outcomes[t].state for t in tags} == {MODIFIED}
