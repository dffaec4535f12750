"""Fault containment across a mesh: a routing-protocol control message whose handling fails
closes only the inter-router connection it came on (amqp:internal-error); the connector
re-establishes it, the mesh heals and routes again, and the router's clients never notice
but for the fate of messages that were crossing (docs/architecture.md, "The fault boundary")."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.management.mgmt import ROUTER, MgmtClient
from tests.mesh.meshproc import Mesh, build_mesh, start_order
from tests.mesh.traffic import wait_remote
from tests.router.amqpclient import ACCEPTED, Net, msg
from tests.router.fixtures import stop_checked

CROSSING = 1000


@pytest.fixture
def hooked_mesh(tmp_path: Path) -> Iterator[Mesh]:
    """Two interior routers, B connecting to A, both with test hooks on (-T)."""
    mesh = build_mesh(tmp_path / "mesh", [("B", "A", 1)])
    for router in mesh.routers.values():
        router.args = ["-T"]
    for name in start_order(list(mesh.routers), mesh.edges):
        mesh.routers[name].start()
    mesh.wait_converged(timeout=mesh.timers.convergence_bound + 10)
    yield mesh
    mesh.close()
    stop_checked(mesh.routers.values())


def test_a_failing_control_message_closes_only_its_inter_router_connection(hooked_mesh: Mesh,
                                                                           net: Net) -> None:
    mesh = hooked_mesh
    a, b = mesh["A"], mesh["B"]
    a.tracebacks_allowed = 1
    address = "closest/across"
    consumer = net.connect(b.url)
    receiver = consumer.receiver(address, credit=500)
    wait_remote(mesh, "A", address, 1, net=net)
    producer = net.connect(a.url)
    sender = producer.sender(address)
    # A local pair on A, which the failure must not touch.
    local = net.connect(a.url)
    local_receiver = local.receiver("closest/local", credit=500)
    local_sender = local.sender("closest/local")

    steady = MgmtClient(net, net.connect(a.url))
    assert steady.request("TEST-FAULT", props={"point": "control"}).status == 200
    crossing = [sender.send(msg(f"crossing-{n}")) for n in range(CROSSING)]
    local_tags = [local_sender.send(msg(f"local-{n}")) for n in range(CROSSING)]
    # The next HELLO from B fails on A: A closes the inter-router connection.
    deadline = time.monotonic() + 15
    while "closed: amqp:internal-error" not in b.stderr_text() and time.monotonic() < deadline:
        net.pump(0.1)
    b_log = b.stderr_text()
    assert "closed: amqp:internal-error: internal error: ArmedFault" in b_log, b_log[-3000:]
    assert "Internal error handling a delivery on connection" in a.stderr_text()

    # Every message that was crossing gets an outcome: delivered and accepted, or handed back.
    net.wait(lambda: all(t in sender.outcomes for t in crossing), 30, "outcomes of the crossing messages")
    counts = sender.outcome_counts()
    assert set(counts) <= {"accepted", "released", "modified"}, counts
    assert counts.get("accepted", 0) <= len(receiver.received), (counts, len(receiver.received))
    # The local pair was served throughout.
    net.wait(lambda: all(t in local_sender.outcomes for t in local_tags), 30, "the local pair's outcomes")
    assert local_sender.outcome_counts() == {"accepted": CROSSING}
    assert len(local_receiver.received) == CROSSING
    assert producer.alive and consumer.alive and local.alive

    # B's connector re-establishes the connection; the mesh heals and routes again.
    mesh.wait_converged(timeout=mesh.timers.convergence_bound + 15)
    wait_remote(mesh, "A", address, 1, net=net)
    before = len(receiver.received)
    after = [sender.send(msg(f"after-{n}")) for n in range(CROSSING)]
    net.wait(lambda: all(t in sender.outcomes for t in after), 30, "outcomes after the mesh healed")
    assert [sender.outcomes[t].state for t in after] == [ACCEPTED] * CROSSING
    net.wait(lambda: len(receiver.received) >= before + CROSSING, 10, "the messages after healing")

    row = steady.query(ROUTER)[0]
    assert row["internalErrorCount"] == 1
    assert a.stderr_text().count("Traceback") == 1
    assert "Traceback" not in b.stderr_text()
    assert mesh.mgmt("B").query(ROUTER)[0]["internalErrorCount"] == 0
