"""What senders hear when the router they send through stops (SIGTERM, as Kubernetes stops a
pod when a RouterMesh scales down): every unsettled delivery must end with an outcome the
sender can act on, never in doubt.  Deliveries already forwarded to another router come back
as modified (delivery-failed): the next router may have passed them on, so released would be
a lie; the sender may send them again (at-least-once).

The order the connections were opened in must not matter: a sender connected before the
inter-router connection its messages left on hears the outcome too (it once did not: stop()
closed connections in opening order, and the sender's went first)."""

from __future__ import annotations

from typing import List

import pytest

from tests.mesh.conftest import MeshFactory
from tests.mesh.meshproc import Mesh
from tests.mesh.traffic import wait_received, wait_remote
from tests.router.amqpclient import Net, SenderLink, msg

PAIR = [("B", "A", 1)]


def _stop_b_and_expect_modified(mesh: Mesh, net: Net, snd: SenderLink, tags: List[str]) -> None:
    """SIGTERM router B (the sender's): every delivery comes back modified, delivery-failed."""
    mesh.drop_clients("B")
    assert mesh["B"].terminate() == 0
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "an outcome for every delivery")
    assert {snd.outcomes[t].name for t in tags if t in snd.outcomes} == {"modified"}, snd.outcomes
    assert all(t in snd.outcomes and snd.outcomes[t].failed for t in tags), snd.outcomes


@pytest.mark.differs_from_c("when a router stops, qdrouterd closes its sockets without an outcome for the "
                            "deliveries it holds: the sender's stay in doubt; qdmesh gives each one "
                            "(modified or released) before it closes")
def test_forwarded_unsettled_deliveries_come_back_to_the_sender_when_its_router_stops(
        mesh_factory: MeshFactory, net: Net) -> None:
    mesh = mesh_factory(PAIR)
    addr = "closest/stop-forwarded"
    rcv = net.connect(mesh["A"].url).receiver(addr, settle=None)
    wait_remote(mesh, "B", addr, 1, net=net)
    snd = net.connect(mesh["B"].url).sender(addr)
    tags = [snd.send(msg(f"m{i}")) for i in range(5)]
    wait_received(net, [rcv], 5)
    _stop_b_and_expect_modified(mesh, net, snd, tags)


@pytest.mark.differs_from_c("when a router stops, qdrouterd closes its sockets without an outcome for the "
                            "deliveries it holds: the sender's stay in doubt; qdmesh gives each one "
                            "(modified or released) before it closes")
def test_queued_deliveries_come_back_to_the_sender_when_its_router_stops(
        mesh_factory: MeshFactory, net: Net) -> None:
    mesh = mesh_factory(PAIR)
    addr = "closest/stop-queued"
    rcv = net.connect(mesh["A"].url).receiver(addr, credit=1, refill=False, settle=None)
    wait_remote(mesh, "B", addr, 1, net=net)
    snd = net.connect(mesh["B"].url).sender(addr)
    tags = [snd.send(msg(f"m{i}")) for i in range(5)]
    wait_received(net, [rcv], 1)
    net.pump(0.5)
    _stop_b_and_expect_modified(mesh, net, snd, tags)


@pytest.mark.differs_from_c("when a router stops, qdrouterd closes its sockets without an outcome for the "
                            "deliveries it holds: the sender's stay in doubt; qdmesh gives each one "
                            "(modified or released) before it closes")
def test_outcomes_also_when_the_sender_connected_before_the_inter_router_link(
        mesh_factory: MeshFactory, net: Net) -> None:
    mesh = mesh_factory(PAIR)
    addr = "closest/stop-order"
    snd_client = net.connect(mesh["B"].url)  # older than B's next inter-router connection
    mesh.kill("A")
    mesh.restart("A")
    mesh.wait_converged(timeout=mesh.timers.convergence_bound + 10)
    rcv = net.connect(mesh["A"].url).receiver(addr, settle=None)
    wait_remote(mesh, "B", addr, 1, net=net)
    snd = snd_client.sender(addr)
    tags = [snd.send(msg(f"m{i}")) for i in range(5)]
    wait_received(net, [rcv], 5)
    _stop_b_and_expect_modified(mesh, net, snd, tags)
