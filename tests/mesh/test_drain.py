"""A graceful drain (SIGTERM with --drain-timeout above 0, as Kubernetes stops a router pod):
the router accepts nothing new, the other routers route around it, what it holds settles, its
clients are handed back, and it exits 0 within the drain timeout; no sender is left in doubt.

qdrouterd has no drain: on SIGTERM it exits, and what it held is in doubt for its senders
(bench/drain_outcomes.py measures both; docs/operations.md, "Draining a router")."""

from __future__ import annotations

import signal
import socket
import time
from typing import List

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.mesh.conftest import MeshFactory
from tests.mesh.drain_traffic import settle_all, stream, tally
from tests.mesh.meshproc import Mesh, MeshRouter, section
from tests.mesh.traffic import trace_of, wait_received, wait_remote
from tests.ports import free_port
from tests.router.amqpclient import Net, msg
from tests.router.routerproc import run_qdrouter
from tests.router_http.scrape import get

# A square whose cheaper side passes B: A-B-C costs 2, A-D-C costs 4.
SQUARE = [("B", "A", 1), ("C", "B", 1), ("D", "A", 2), ("C", "D", 2)]
PAIR = [("B", "A", 1)]
ROUTER_TYPE = "org.apache.qpid.dispatch.router"
# Beyond the drain timeout: the hand-back's wait for clients (1 s), the stop's wait for the
# close handshakes (2 s) and a slow machine's scheduling.
EXIT_SLACK_S = 6.0

pytestmark = pytest.mark.qdmesh_only("qdrouterd has no graceful drain (--drain-timeout is qdmesh's)")


def _drain(mesh: Mesh, rid: str) -> float:
    """SIGTERM router ``rid``; returns when (monotonic) the signal went."""
    mesh.drop_clients(rid)
    router: MeshRouter = mesh[rid]
    router.exit_expected = True
    router.send_signal(signal.SIGTERM)
    return time.monotonic()


def _wait_log(net: Net, router: MeshRouter, text: str, timeout: float = 10) -> None:
    net.wait(lambda: text in router.stderr_text(), timeout, f"{text!r} in {router.router_id}'s log")


def test_traffic_from_other_routers_flows_around_a_draining_router(mesh_factory: MeshFactory,
                                                                    net: Net) -> None:
    mesh = mesh_factory(SQUARE, args={"B": ["--drain-timeout", "15"]})
    addr = "closest/drain-square"
    rcv = net.connect(mesh["C"].url).receiver(addr, credit=250)
    wait_remote(mesh, "A", addr, 1, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    stream(net, snd, lambda: len(rcv.received) >= 200, 30)
    assert "0/B" in trace_of(rcv.received[0]), trace_of(rcv.received[0])

    signalled = _drain(mesh, "B")
    stream(net, snd, lambda: not mesh["B"].is_running(), 15 + EXIT_SLACK_S)
    took = time.monotonic() - signalled
    before = len(rcv.received)
    stream(net, snd, lambda: len(rcv.received) >= before + 200, 30)
    settle_all(net, snd, 15)

    assert mesh["B"].wait_exit(1) == 0, mesh["B"].describe()
    assert took < 15, f"B took {took:.1f}s: nothing was stuck, it should leave before its drain timeout"
    result = tally(snd, [rcv])
    assert result.outcomes == {"accepted": result.sent}, result.row()
    assert result.received == result.sent and result.duplicates == 0, result.row()
    assert "0/D" in trace_of(rcv.received[-1]), trace_of(rcv.received[-1])
    assert snd.client.alive and not snd.remote_closed, "the producer on A kept its link"
    log = mesh["B"].stderr_text()
    assert "withdrew from the network" in log and "handed back" in log, log[-3000:]


def test_a_consumer_on_the_draining_router_is_replaced_by_one_elsewhere(mesh_factory: MeshFactory,
                                                                       net: Net) -> None:
    # A star around A: the consumer on B is the closest (cost 1), the one on C the next (2).
    mesh = mesh_factory([("B", "A", 1), ("C", "A", 2)], args={"B": ["--drain-timeout", "15"]})
    addr = "closest/drain-consumer"
    on_b = net.connect(mesh["B"].url).receiver(addr, credit=250)
    on_c = net.connect(mesh["C"].url).receiver(addr, credit=250)
    wait_remote(mesh, "A", addr, 2, net=net)
    snd = net.connect(mesh["A"].url).sender(addr)
    stream(net, snd, lambda: len(on_b.received) >= 200, 30)
    assert not on_c.received, "the traffic went to the closest consumer, on B"

    _drain(mesh, "B")
    stream(net, snd, lambda: not mesh["B"].is_running(), 15 + EXIT_SLACK_S)
    before = len(on_c.received)
    stream(net, snd, lambda: len(on_c.received) >= before + 200, 30)
    settle_all(net, snd, 15)

    assert mesh["B"].wait_exit(1) == 0, mesh["B"].describe()
    result = tally(snd, [on_b, on_c])
    assert result.outcomes == {"accepted": result.sent}, result.row()
    assert result.received == result.sent and result.duplicates == 0, result.row()
    error = on_b.client.error
    assert error is not None and error.name == "amqp:connection:forced", error


def test_a_producer_on_the_draining_router_hears_an_outcome_for_every_delivery(
        mesh_factory: MeshFactory, net: Net) -> None:
    mesh = mesh_factory(PAIR, args={"B": ["--drain-timeout", "10"]})
    addr = "closest/drain-local-producer"
    rcv = net.connect(mesh["A"].url).receiver(addr, credit=250)
    wait_remote(mesh, "B", addr, 1, net=net)
    snd = net.connect(mesh["B"].url).sender(addr)
    stream(net, snd, lambda: len(rcv.received) >= 200, 30)

    signalled = _drain(mesh, "B")
    stream(net, snd, lambda: not snd.client.alive, 10 + EXIT_SLACK_S)
    settle_all(net, snd, 5)
    took = time.monotonic() - signalled

    result = tally(snd, [rcv])
    assert result.unknown == 0, result.row()
    assert result.outcomes == {"accepted": result.sent}, result.row()
    assert result.received == result.sent and result.duplicates == 0, result.row()
    assert took < 10, f"{took:.1f}s: nothing was stuck, the drain should not wait out its timeout"
    error = snd.client.error
    assert error is not None and error.name == "amqp:connection:forced", error
    assert "router B is shutting down" in (error.description or ""), error
    assert mesh["B"].wait_exit(EXIT_SLACK_S) == 0, mesh["B"].describe()


def test_a_stuck_consumer_does_not_keep_the_router_past_the_drain_timeout(
        mesh_factory: MeshFactory, net: Net) -> None:
    drain_s = 4
    http_port = free_port()
    mesh = mesh_factory(PAIR, args={"B": ["--drain-timeout", str(drain_s)]},
                        extra={"B": section("listener", {"host": "127.0.0.1", "port": http_port,
                                                         "http": "true"})})
    addr = "closest/drain-stuck"
    rcv = net.connect(mesh["A"].url).receiver(addr, settle=None)  # never settles
    wait_remote(mesh, "B", addr, 1, net=net)
    client = net.connect(mesh["B"].url)
    snd = client.sender(addr)
    tags = [snd.send(msg(f"m{i}")) for i in range(5)]
    wait_received(net, [rcv], 5)
    # Connected before the drain (the listener closes), and kept open through it.
    management = ManagementClient(mesh["B"].url, timeout=3.0)
    assert management.query(ROUTER_TYPE)[0].get("draining") is False

    signalled = _drain(mesh, "B")
    _wait_log(net, mesh["B"], "Draining router B")
    assert management.query(ROUTER_TYPE)[0].get("draining") is True
    status, text, _ = get(http_port, "/readyz")
    assert status == 503 and "draining" in text, (status, text)
    assert get(http_port, "/healthz")[0] == 200
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", mesh["B"].port), timeout=2).close()
    late = client.receiver("closest/drain-late")
    net.wait(lambda: late.remote_closed, 5, "the late attach to be refused")
    assert late.remote_condition is not None and late.remote_condition.name == "qd:router-draining"
    assert "router B is shutting down" in (late.remote_condition.description or "")
    management.close()

    net.wait(lambda: not mesh["B"].is_running(), drain_s + EXIT_SLACK_S, "B to exit")
    took = time.monotonic() - signalled
    settle_all(net, snd, 5)
    assert mesh["B"].wait_exit(1) == 0, mesh["B"].describe()
    assert took >= drain_s - 0.5, f"B stopped after {took:.1f}s, before its drain timeout"
    assert {snd.outcomes[t].name for t in tags if t in snd.outcomes} == {"modified"}, snd.outcomes
    assert all(t in snd.outcomes for t in tags), snd.outcomes
    assert "5 given up at the drain timeout" in mesh["B"].stderr_text(), mesh["B"].stderr_text()[-3000:]


@pytest.mark.parametrize("how", ["drain-timeout-0", "second-signal"])
def test_stopping_at_once(mesh_factory: MeshFactory, net: Net, how: str) -> None:
    """--drain-timeout 0 stops at once as before; so does a second SIGTERM during a drain."""
    drain_s = "0" if how == "drain-timeout-0" else "60"
    mesh = mesh_factory(PAIR, args={"B": ["--drain-timeout", drain_s]})
    addr = f"closest/drain-{how}"
    rcv = net.connect(mesh["A"].url).receiver(addr, settle=None)
    wait_remote(mesh, "B", addr, 1, net=net)
    snd = net.connect(mesh["B"].url).sender(addr)
    tags: List[str] = [snd.send(msg(f"m{i}")) for i in range(5)]
    wait_received(net, [rcv], 5)
    signalled = _drain(mesh, "B")
    if how == "second-signal":
        _wait_log(net, mesh["B"], "Draining router B")
        signalled = time.monotonic()
        mesh["B"].send_signal(signal.SIGTERM)
    net.wait(lambda: not mesh["B"].is_running(), 5, "B to stop at once")
    assert time.monotonic() - signalled < 5
    assert mesh["B"].wait_exit(1) == 0, mesh["B"].describe()
    net.wait(lambda: all(t in snd.outcomes for t in tags), 5, "an outcome for every delivery")
    assert {snd.outcomes[t].name for t in tags} == {"modified"}, snd.outcomes


@pytest.mark.parametrize("value, says", [("-1", "must be 0 to 3600 seconds, not -1"),
                                         ("soon", "not a number of seconds: 'soon'"),
                                         ("nan", "must be 0 to 3600 seconds, not nan")])
def test_a_bad_drain_timeout_is_refused_naming_the_option(value: str, says: str) -> None:
    result = run_qdrouter(["--drain-timeout", value])
    assert result.returncode == 2, result
    assert f"argument --drain-timeout: {says}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_drain_timeout_from_the_environment_is_refused_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator sets the drain timeout through QDMESH_DRAIN_TIMEOUT (an older router image
    ignores a variable, but would refuse an option): checked as the option is."""
    monkeypatch.setenv("QDMESH_DRAIN_TIMEOUT", "soon")
    result = run_qdrouter([])
    assert result.returncode == 2, result
    assert "environment variable QDMESH_DRAIN_TIMEOUT: not a number of seconds: 'soon'" in result.stderr
    assert "Traceback" not in result.stderr
