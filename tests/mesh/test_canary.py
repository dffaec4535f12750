"""Round trips to neighbours, measured by the routers themselves (router canaryIntervalSeconds,
qdrouter/canary/): a line A-B-C of real routers probing once a second. The router.node rows of
neighbours show the round trip; a frozen neighbour's failures rise by one probe per interval
(never a queue of requests), and it recovers when it runs again or is restarted; /metrics
exports the histogram and the failures per neighbour."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict

import pytest

from qdrouter.tools.errors import ManagementError
from tests.mesh.conftest import LINE3, MeshFactory
from tests.mesh.meshproc import Mesh, Timers, section
from tests.router.routerproc import free_port
from tests.router_http.scrape import scrape, value

pytestmark = pytest.mark.qdmesh_only("round-trip probes to neighbours are qdmesh's own")

INTERVAL = 1
ADDRESS_TYPE = "org.apache.qpid.dispatch.router.address"


@dataclass
class CanaryTimers(Timers):
    """The mesh tests' timers, the routers probing their neighbours every INTERVAL seconds.
    A long hello max age keeps a frozen router a neighbour (its rows stay) for the test."""
    hello_max_age: int = 20

    def config(self) -> str:
        return super().config() + f"    canaryIntervalSeconds: {INTERVAL}\n"


def wait_for(what: str, condition: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = condition()
        except ManagementError as error:
            last = error
        else:
            if last:
                return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def node(mesh: Mesh, at: str, other: str) -> Dict[str, object]:
    return mesh.nodes(at)[other]


def answered(mesh: Mesh, at: str, other: str) -> Dict[str, object] | None:
    """``at``'s row for neighbour ``other`` once a probe was answered and none failed since."""
    row = node(mesh, at, other)
    return row if row.get("roundTripSeconds") is not None and row.get("probeFailures") == 0 else None


def answers_received(mesh: Mesh, rid: str) -> int:
    """Answers to ``rid``'s probes that reached its reply-to address, late ones included."""
    rows = mesh.mgmt(rid).query(ADDRESS_TYPE)
    return sum(int(row.get("deliveriesToContainer") or 0) for row in rows
               if row.get("key") == f"T0/{rid}/$qdmesh.canary")


def test_neighbours_round_trips_failures_and_recovery(mesh_factory: MeshFactory) -> None:
    started = time.monotonic()
    mesh = mesh_factory(LINE3, timers=CanaryTimers())
    for at, other in (("A", "B"), ("B", "A"), ("B", "C"), ("C", "B")):
        row = wait_for(f"{at}'s round trip to {other}", lambda a=at, o=other: answered(mesh, a, o))
        # Loopback and two management agents: well under the one-second timeout.
        assert 0 < float(row["roundTripSeconds"]) < INTERVAL, row
        assert 0 < float(row["roundTripAverageSeconds"]) < INTERVAL, row
    # A router that is not a neighbour is not probed.
    far = node(mesh, "A", "C")
    assert far.get("roundTripSeconds") is None and far.get("probeFailures") is None, far

    # C frozen (its connections stay up): B's probes to it go unanswered, one per interval.
    frozen_at = time.monotonic()
    mesh["C"].send_signal(signal.SIGSTOP)
    try:
        wait_for("B counting 4 failed probes to frozen C",
                 lambda: int(node(mesh, "B", "C").get("probeFailures") or 0) >= 4, timeout=15)
        failures = int(node(mesh, "B", "C")["probeFailures"])
        frozen_for = time.monotonic() - frozen_at
        assert failures <= frozen_for / INTERVAL + 1, (failures, frozen_for)
        # B's other neighbour is unaffected.
        assert wait_for("B still hearing from A", lambda: answered(mesh, "B", "A"))
    finally:
        mesh["C"].send_signal(signal.SIGCONT)
    wait_for("B's probes to C answered again", lambda: answered(mesh, "B", "C"))
    # Every probe B sent was answered once C ran again, late answers included: no more than
    # one per neighbour per interval since the mesh started (a storm of retries while C was
    # frozen would show here).
    elapsed = time.monotonic() - started
    received = wait_for("the answers C owed B", lambda: answers_received(mesh, "B") >= elapsed / INTERVAL)
    received = answers_received(mesh, "B")
    elapsed = time.monotonic() - started
    assert received <= 2 * (elapsed / INTERVAL + 1), (received, elapsed)

    # C killed: B forgets it; restarted: measured afresh.
    mesh.kill("C")
    wait_for("C gone from B's routers", lambda: "C" not in mesh.nodes("B"), timeout=30)
    mesh.restart("C")
    mesh.wait_converged(timeout=mesh.timers.convergence_bound + 10)
    wait_for("B's round trip to the restarted C", lambda: answered(mesh, "B", "C"))


def test_metrics_export_round_trips_per_neighbour(mesh_factory: MeshFactory) -> None:
    port = free_port()
    mesh = mesh_factory(LINE3, timers=CanaryTimers(),
                        extra={"B": section("listener", {"host": "127.0.0.1", "port": port, "http": "true"})})
    for other in ("A", "C"):
        wait_for(f"B's round trip to {other}", lambda o=other: answered(mesh, "B", o))
    samples = scrape(port)
    name = "qdmesh_neighbor_round_trip_seconds"
    for peer in ("A", "C"):
        count = value(samples, f"{name}_count", peer=peer)
        assert count >= 1, samples
        assert value(samples, f"{name}_bucket", peer=peer, le="+Inf") == count
        assert 0 < value(samples, f"{name}_sum", peer=peer) < count * INTERVAL
        buckets = sorted((float(dict(labels)["le"]), number) for (sample, labels), number in samples.items()
                         if sample == f"{name}_bucket" and dict(labels)["peer"] == peer)
        assert [bound for bound, _ in buckets][:2] == [0.0001, 0.00025] and buckets[-2][0] == 5.0
        assert [number for _, number in buckets] == sorted(number for _, number in buckets), "cumulative"
        assert ("qdmesh_neighbor_probe_failures_total", (("peer", peer),)) in samples
    # Series for neighbours only: B's, not the routers beyond them (A has only B).
    peers = {dict(labels).get("peer") for (sample, labels) in samples if sample.startswith(name)}
    assert peers == {"A", "C"}
