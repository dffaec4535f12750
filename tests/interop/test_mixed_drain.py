"""A qdmesh router drained (SIGTERM) in a mesh of C routers (qdrouterd 1.19): they take its
empty link state and route around it, so their clients' traffic through it loses nothing."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.interop.mixed_topology import MixedMesh, query, remote_count, routes_complete
from tests.mesh.drain_traffic import settle_all, stream, tally
from tests.mesh.meshproc import MeshRouter
from tests.router.amqpclient import Net

# CA-QB-CC (2 hops) beside CA-CD-CE-CC (3 hops): traffic from CA to CC crosses QB until it
# leaves. Each router connects to one started before it.
NAMES = ["CC", "QB", "CE", "CD", "CA"]
EDGES = [("QB", "CC"), ("CA", "QB"), ("CE", "CC"), ("CD", "CE"), ("CA", "CD")]
DRAIN_S = 15
ROUTER_TYPE = "org.apache.qpid.dispatch.router"

pytestmark = pytest.mark.qdmesh_only("a qdmesh router's drain (--drain-timeout) among C routers")


@pytest.fixture
def mesh(tmp_path: Path) -> Iterator[MixedMesh]:
    built = MixedMesh(tmp_path, NAMES, EDGES)
    drained = built["QB"]
    assert isinstance(drained, MeshRouter)
    drained.args.extend(["--drain-timeout", str(DRAIN_S)])
    try:
        built.start()
        waiter = Net()
        try:
            waiter.wait(lambda: all(routes_complete(built[n], NAMES) for n in NAMES), 30,
                        f"every router to route to every other\n{built.logs()}")
        finally:
            waiter.close()
        yield built
    finally:
        errors = built.stop()
        assert not errors, "\n\n".join(errors)


def test_c_routers_route_around_a_draining_qdmesh_router(mesh: MixedMesh, net: Net) -> None:
    addr = "closest/mixed-drain"
    rcv = net.connect(mesh["CC"].url).receiver(addr, credit=250)
    net.wait(lambda: remote_count(mesh["CA"], addr) == 1, 20, f"CA to learn of the consumer of {addr}")
    snd = net.connect(mesh["CA"].url).sender(addr)
    stream(net, snd, lambda: len(rcv.received) >= 200, 30)
    drained = mesh["QB"]
    assert isinstance(drained, MeshRouter)
    transit = query(drained.url, ROUTER_TYPE, ["deliveriesTransit"])[0]["deliveriesTransit"]
    assert isinstance(transit, int) and transit >= 200, f"the traffic did not cross QB ({transit})"

    drained.exit_expected = True
    drained.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    stream(net, snd, lambda: not drained.is_running(), DRAIN_S + 6)
    took = time.monotonic() - signalled
    before = len(rcv.received)
    stream(net, snd, lambda: len(rcv.received) >= before + 200, 30)
    settle_all(net, snd, 15)

    assert drained.wait_exit(1) == 0, drained.describe()
    assert took < DRAIN_S, f"QB took {took:.1f}s: nothing was stuck, the drain should not time out"
    result = tally(snd, [rcv])
    assert result.outcomes == {"accepted": result.sent}, (result.row(), mesh.logs())
    assert result.received == result.sent and result.duplicates == 0, result.row()
