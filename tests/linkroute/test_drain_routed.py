"""A graceful drain (SIGTERM with --drain-timeout) of a router carrying link-routed links: it
waits for the routed deliveries in flight to be settled by the container (bounded by the drain
timeout), gives the routed producers no more credit, and refuses a new link-routed attach
with qd:router-draining (docs/operations.md, "Draining a router").  The container is a real
qdmesh router whose receiving client holds what it gets unsettled until the test settles it.

qdrouterd has no drain: on SIGTERM it exits, and routed deliveries in flight are in doubt."""

from __future__ import annotations

import signal
import time

import pytest

from tests.linkroute.conftest import EdgeFactory
from tests.linkroute.lrutil import both_ways
from tests.router.amqpclient import ACCEPTED, Net, msg
from tests.router.routerproc import Router

pytestmark = pytest.mark.qdmesh_only("qdrouterd has no graceful drain (--drain-timeout is qdmesh's)")

DRAIN_TIMEOUT_S = 20
HELD_S = 3.0  # how long the container holds the deliveries while the router drains


def test_drain_waits_for_routed_deliveries_and_refuses_new_routed_attaches(
        edge_factory: EdgeFactory, container: Router, net: Net) -> None:
    router = edge_factory(both_ways("lr.", connection="to-c"), containers={"to-c": container.port}, active=2,
                          args=["--drain-timeout", str(DRAIN_TIMEOUT_S)])
    receiver = net.connect(container.url).receiver("lr.q", credit=50, settle=None)
    client = net.connect(router.url)
    sender = client.sender("lr.q")
    net.wait(lambda: sender.credit > 0, 30, "credit through the link route")
    for index in range(5):
        sender.send(msg(f"m{index}"))
    net.wait(lambda: len(receiver.unsettled) == 5, 30, "five routed deliveries held at the container")
    credit_before = sender.credit

    router.exit_expected = True
    router.send_signal(signal.SIGTERM)
    net.wait(lambda: "Draining router" in router.stderr_text(), 10, "the drain to begin")
    # A new link-routed attach on the open connection is refused, naming why.
    late = client.sender("lr.other")
    net.wait(lambda: late.remote_closed, 10, "the late attach answered")
    assert late.remote_condition is not None and late.remote_condition.name == "qd:router-draining"
    # The container grants more credit meanwhile: none of it reaches the routed producer.
    receiver.flow(50)
    started = time.monotonic()
    net.pump(HELD_S)
    assert router.proc is not None and router.proc.poll() is None, "the router left with deliveries in flight"
    assert sender.credit <= credit_before
    assert not sender.all_settled()

    receiver.settle_unsettled(ACCEPTED)
    net.wait(sender.all_settled, 15, "the outcomes back through the draining router")
    assert sender.outcome_counts() == {"accepted": 5}
    assert router.wait_exit(DRAIN_TIMEOUT_S) == 0
    # It left once they were settled, not at the drain timeout.
    assert time.monotonic() - started < DRAIN_TIMEOUT_S
    log = router.stderr_text()
    assert "5 delivery(ies) in flight" in log, log[-2000:]
    assert "0 given up at the drain timeout" in log, log[-2000:]
    assert "0 link-routed one(s) still unsettled" in log, log[-2000:]
