"""A real mesh recorded by the collector around known traffic (the ground truth the analysis
is checked against).

Line A - B - C (three router processes). Traffic, all closest addresses:
  tel.east   sender on A, receiver on C accepts: 40 then 20 more
  tel.west   sender on C, receiver on A accepts: 10 then 15 more
  tel.local  sender and receiver on B: 20, of which the receiver accepts 15 and rejects 5
  tel.slow   sender and receiver on B; the receiver settles nothing: 5 then 15 more held
One auto-link on B points at a container that never connects (always inactive). One client
connection opens after the first snapshot and closes before the last. The collector reads each
router directly (no management traffic crosses inter-router links), four rounds in all.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

from proton import Message

from qdmesh_telemetry.collector import Collector, CollectorOptions
from tests.mesh.meshproc import Mesh, build_mesh, start_order
from tests.mesh.traffic import wait_remote
from tests.router.amqpclient import ACCEPTED, REJECTED, Net, send_and_settle

LINE3 = [("B", "A", 1), ("C", "B", 1)]
AUTOLINK = "org.apache.qpid.dispatch.router.config.autoLink"

SENT = {"tel.east": 60, "tel.west": 25, "tel.local": 20, "tel.slow": 20}
# Deliveries each inter-router data link carries: east goes A->B->C, west C->B->A.
MATRIX = {("A", "B"): 60, ("B", "C"): 60, ("C", "B"): 25, ("B", "A"): 25}


@dataclass
class Recording:
    snapshots: Path
    discovered: Path
    mesh: Mesh
    rounds: int
    round_times: List[float] = field(default_factory=list)
    discovered_routers: List[str] = field(default_factory=list)
    outcomes: Dict[str, Dict[str, int]] = field(default_factory=dict)


def _messages(address: str, count: int) -> List[Message]:
    return [Message(address=f"closest/{address}", body=f"{address} {i}") for i in range(count)]


def _send(net: Net, sender: object, address: str, count: int) -> List[str]:
    return [o.name for o in send_and_settle(net, sender, _messages(address, count), timeout=20)]  # type: ignore[arg-type]


@contextlib.contextmanager
def record_mesh(workdir: Path) -> Iterator[Recording]:
    mesh = build_mesh(workdir / "routers", LINE3)
    net = Net()
    collector = None
    try:
        for name in start_order(list(mesh.routers), LINE3):
            mesh.routers[name].start()
        mesh.wait_converged(timeout=mesh.timers.convergence_bound + 10)
        mesh.mgmt("B").create(AUTOLINK, {"address": "tel.broker", "direction": "in",
                                         "containerId": "no-such-broker"}, name="tel-broker-in")
        a, b, c = (net.connect(mesh[r].url) for r in "ABC")
        east_rx = c.receiver("closest/tel.east", credit=200)
        west_rx = a.receiver("closest/tel.west", credit=200)
        local_rx = b.receiver("closest/tel.local", credit=200, settle=None)
        slow_rx = b.receiver("closest/tel.slow", credit=200, settle=None)
        wait_remote(mesh, "A", "closest/tel.east", 1, timeout=20)
        wait_remote(mesh, "C", "closest/tel.west", 1, timeout=20)
        options = CollectorOptions(mesh="line3", output=workdir / "snapshots", interval=1.0, timeout=5.0)
        collector = Collector([mesh[r].url for r in "ABC"], options)
        recording = Recording(workdir / "snapshots", workdir / "discovered", mesh, rounds=4)

        def snapshot() -> None:
            # Rounds at least 1.2 s apart: with 1 s buckets each round's increments get a bucket
            # of their own, so a test can check one interval's rate.
            if recording.round_times:
                time.sleep(max(0.0, recording.round_times[-1] + 1.2 - time.time()))
            recording.round_times.append(time.time())
            answered = collector.poll_round()  # type: ignore[union-attr]
            assert answered == 3, f"only {answered} of 3 routers answered the collector"

        snapshot()
        churner = net.connect(mesh["B"].url)
        east_tx, west_tx = a.sender("closest/tel.east"), c.sender("closest/tel.west")
        local_tx, slow_tx = b.sender("closest/tel.local"), b.sender("closest/tel.slow")
        outcomes: Dict[str, List[str]] = {"tel.east": _send(net, east_tx, "tel.east", 40),
                                          "tel.west": _send(net, west_tx, "tel.west", 10)}
        for message in _messages("tel.local", 20):
            local_tx.send(message)
        for message in _messages("tel.slow", 5):
            slow_tx.send(message)
        net.wait(lambda: len(local_rx.received) == 20 and len(slow_rx.received) == 5, 20, "local and slow")
        local_rx.settle_unsettled(ACCEPTED, 15)
        local_rx.settle_unsettled(REJECTED)
        net.wait(lambda: len(local_tx.outcomes) == 20, 20, "tel.local outcomes")
        outcomes["tel.local"] = [o.name for o in local_tx.outcomes.values()]
        snapshot()

        outcomes["tel.east"] += _send(net, east_tx, "tel.east", 20)
        outcomes["tel.west"] += _send(net, west_tx, "tel.west", 15)
        for message in _messages("tel.slow", 15):
            slow_tx.send(message)
        net.wait(lambda: len(slow_rx.received) == 20, 20, "20 held tel.slow messages")
        net.wait(lambda: len(east_rx.received) == 60 and len(west_rx.received) == 25, 20, "east and west")
        churner.close()
        net.pump(0.3)
        snapshot()
        snapshot()
        collector.close()
        recording.outcomes = {k: {n: v.count(n) for n in set(v)} for k, v in outcomes.items()}

        # Discovery: from A alone, the collector finds B and C and reads them through A.
        finder = Collector([mesh["A"].url], CollectorOptions(mesh="line3", output=recording.discovered,
                                                            discover=True, timeout=5.0))
        finder.poll_round()
        finder.close()
        recording.discovered_routers = sorted(p.router_id or "?" for p in finder.pollers.values())
        slow_rx.settle_unsettled(ACCEPTED)
        net.pump(0.2)
        yield recording
    finally:
        if collector is not None:
            collector.close()
        net.close()
        mesh.close()
        errors: List[Tuple[str, str]] = []
        for name, router in mesh.routers.items():
            try:
                router.stop(check=True)
            except AssertionError as e:
                errors.append((name, str(e)))
        assert not errors, errors
