"""Failover in a ring of alternating qdmesh and C routers (Q1-C1-Q2-C2): unsettled traffic
flows between two routers of one kind across the two of the other kind; the router of the
other kind carrying it is killed (SIGKILL, a crash) mid-stream and later restarted. Every
message gets an outcome, none is lost: each one accepted was received, the others come back
modified or released for the producer to send again, and traffic moves to the other path
and, after the restart, keeps flowing."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List

import pytest

from tests.interop.mixed_topology import (
    ADDRESS_TYPE,
    AnyRouter,
    MixedMesh,
    query,
    remote_count,
    ring,
    routes_complete,
)
from tests.mesh.meshproc import MeshRouter
from tests.router.amqpclient import Net, ReceiverLink, SenderLink, msg

NAMES = ["Q1", "C1", "Q2", "C2"]
WINDOW = 20  # unsettled messages in flight
_bodies = itertools.count()


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedMesh]:
    workdir: Path = tmp_path_factory.mktemp("failover")
    built = MixedMesh(workdir, NAMES, ring(NAMES))
    try:
        built.start()
        converge(built)
        yield built
    finally:
        errors = built.stop()
        assert not errors, "\n\n".join(errors)


def converge(mesh: MixedMesh) -> None:
    net = Net()
    try:
        net.wait(lambda: all(routes_complete(mesh[n], NAMES) for n in NAMES), 40,
                 f"the ring to (re)converge\n{mesh.logs()}")
    finally:
        net.close()


def transit(router: AnyRouter, address: str) -> int:
    rows = query(router.url, ADDRESS_TYPE, ["key", "deliveriesTransit"])
    return sum(int(r["deliveriesTransit"] or 0) for r in rows if r["key"] == f"M0{address}")


class Stream:
    """Keeps WINDOW unsettled messages in flight from ``sender`` to ``receiver``."""

    def __init__(self, net: Net, sender: SenderLink, receiver: ReceiverLink) -> None:
        self.net, self.sender, self.receiver = net, sender, receiver
        self.sent: Dict[str, str] = {}  # tag -> body
        self.hold = False

    def run(self, seconds: float, until: Callable[[], bool] | None = None) -> None:
        """Send for ``seconds`` (or until ``until()``), the consumer settling as messages
        arrive unless ``hold`` is set."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until()):
            unsettled = len(self.sent) - sum(t in self.sender.outcomes for t in self.sent)
            for _ in range(min(WINDOW - unsettled, self.sender.credit)):
                body = f"m{next(_bodies)}"
                self.sent[self.sender.send(msg(body))] = body
            self.net.pump(0.02)
            if not self.hold:
                self.receiver.settle_unsettled()

    def finish(self, timeout: float = 90) -> Dict[str, List[str]]:
        """Wait for every outcome; {outcome name: bodies}."""
        self.net.wait(lambda: all(t in self.sender.outcomes for t in self.sent), timeout,
                      f"an outcome for each of {len(self.sent)} messages "
                      f"(missing {sum(t not in self.sender.outcomes for t in self.sent)})")
        by_outcome: Dict[str, List[str]] = {}
        for tag, body in self.sent.items():
            by_outcome.setdefault(self.sender.outcomes[tag].name, []).append(body)
        return by_outcome


def fail_over(net: Net, mesh: MixedMesh, producer_at: str, consumer_at: str, candidates: List[str]) -> None:
    address = f"closest/failover-{producer_at}-{consumer_at}"
    receiver = net.connect(mesh[consumer_at].url).receiver(address, settle=None)
    net.wait(lambda: all(remote_count(mesh[n], address) == 1 for n in NAMES if n != consumer_at), 30,
             f"{address}'s consumer known everywhere")
    sender = net.connect(mesh[producer_at].url).sender(address)
    net.wait(lambda: sender.credit > 0, 10, f"credit on {producer_at}")
    stream = Stream(net, sender, receiver)
    stream.run(1.0)
    [victim] = [n for n in candidates if transit(mesh[n], address) > 0]  # the path in use
    # The consumer holds a window of messages unsettled: their outcomes must cross the victim.
    stream.hold = True
    stream.run(5.0, until=lambda: len(receiver.unsettled) >= WINDOW)
    held = len(receiver.unsettled)
    mesh[victim].hard_kill()
    stream.hold = False
    stream.run(4.0)
    restarted = mesh[victim]
    if isinstance(restarted, MeshRouter):
        restarted.restart()
    else:
        restarted.start()
    converge(mesh)
    # A router carries the stream again only once it knows the consumer (until then it
    # releases, as qdrouterd does): the restarted one asks for the addresses (MAR) at once.
    net.wait(lambda: all(remote_count(mesh[n], address) == 1 for n in NAMES if n != consumer_at), 10,
             f"{address}'s consumer known everywhere again")
    stream.run(2.0)
    outcomes = stream.finish()
    received = set(receiver.bodies())
    assert set(outcomes) <= {"accepted", "modified", "released"}, {k: len(v) for k, v in outcomes.items()}
    lost = [b for b in outcomes["accepted"] if b not in received]
    assert not lost, f"accepted but never received: {lost[:5]}"
    # Traffic went on over the other path while the victim was down, and after its restart.
    sent_last = list(stream.sent.values())[-5:]
    assert all(b in outcomes["accepted"] for b in sent_last), {k: len(v) for k, v in outcomes.items()}
    assert len(outcomes["accepted"]) > 10 * WINDOW, {k: len(v) for k, v in outcomes.items()}
    # The held ones were received, but their acceptance could not come back: each is
    # modified (delivery-failed), so the producer may send it again (at least once).
    assert len(outcomes.get("modified", [])) >= held == WINDOW, {k: len(v) for k, v in outcomes.items()}
    assert mesh[victim].is_running()


def test_c_router_killed_and_restarted_under_traffic(mesh: MixedMesh, net: Net) -> None:
    fail_over(net, mesh, "Q1", "Q2", ["C1", "C2"])


def test_qdmesh_router_killed_and_restarted_under_traffic(mesh: MixedMesh, net: Net) -> None:
    fail_over(net, mesh, "C1", "C2", ["Q1", "Q2"])
