"""The canary (canary/): probes from each router to another's management agent through the
mesh's own routing, a bounded number each round, and what they found in the RouterMesh's
status.  Against a REAL local mesh of router processes: every pair of a line of three routers
reached, then its middle router killed, and the two ends, which both still answer, named as
unable to reach each other."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Tuple

import pytest

from qdmesh_operator.apply.management import ClientPool
from qdmesh_operator.apply.mesh import Applied
from qdmesh_operator.canary import PairResult, pairs_for_round, probe_mesh, summarise
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.status.mesh import mesh_status
from qdrouter.tools.errors import ManagementError
from tests.mesh.conftest import MeshFactory

pytestmark = pytest.mark.timeout(120)

LINE3 = [("B", "A", 1), ("C", "B", 1)]


def test_a_round_probes_each_router_once_and_n_minus_1_rounds_cover_every_pair() -> None:
    routers = [f"m-{i}" for i in range(64)]
    seen: set = set()
    for round_no in range(63):
        pairs = pairs_for_round(routers, round_no)
        assert len(pairs) == 64 and {source for source, _ in pairs} == set(routers)
        assert all(source != destination for source, destination in pairs)
        seen.update(pairs)
    assert len(seen) == 64 * 63
    assert pairs_for_round(["solo"], 0) == []


class _Failing:
    """A management connection whose probes all fail (the pool's client stand-in)."""

    def __init__(self, calls: List[Any]) -> None:
        self.calls = calls

    def call(self, message: Any) -> None:
        self.calls.append(message.address)
        raise ManagementError("released: no route")


class _Pool:
    def __init__(self) -> None:
        self.calls: List[Any] = []

    def get(self, url: str, tls: Any = None) -> _Failing:
        return _Failing(self.calls)


def test_a_round_of_failures_stops_after_a_few_and_keeps_the_other_results() -> None:
    urls = {f"m-{i}": f"amqp://m-{i}" for i in range(10)}
    earlier = {("m-0", "m-5"): PairResult(0.004, "", 1.0), ("m-0", "gone"): PairResult(0.002, "", 1.0)}
    pool = _Pool()
    results = probe_mesh(pool, urls=urls, router_ids={r: r for r in urls}, tls=None,  # type: ignore[arg-type]
                         round_no=0, previous=earlier)
    assert len(pool.calls) == 3, "a partition costs three timeouts a round, not one per pair"
    assert results[("m-0", "m-5")].seconds == 0.004 and ("m-0", "gone") not in results
    assert [pair for pair, r in results.items() if r.seconds is None] == [("m-0", "m-1"), ("m-1", "m-2"),
                                                                          ("m-2", "m-3")]


def _probe_until(pool: ClientPool, urls: Dict[str, str], check: Any, what: str) -> Dict[Tuple[str, str], Any]:
    results: Dict[Tuple[str, str], Any] = {}
    deadline = time.monotonic() + 30
    round_no = 0
    while time.monotonic() < deadline:
        results = probe_mesh(pool, urls=urls, router_ids={r: r for r in urls}, tls=None, round_no=round_no,
                             previous=results)
        if check(results):
            return results
        round_no += 1
        time.sleep(0.2)
    raise AssertionError(f"{what}: {results}")


def test_probes_go_through_the_mesh_and_a_partition_is_named(mesh_factory: MeshFactory) -> None:
    local = mesh_factory(LINE3)
    urls = {name: local.routers[name].url for name in "ABC"}
    pool = ClientPool()
    try:
        every = {(a, b) for a in "ABC" for b in "ABC" if a != b}
        results = _probe_until(pool, urls, lambda r: set(r) == every and all(x.seconds for x in r.values()),
                               "every pair reached")
        summary = summarise(results)
        assert summary.status()["pairs"] == "6/6 reachable" and not summary.failing
        assert 0 < summary.p50_ms <= summary.worst_ms  # type: ignore[operator]

        # The middle router goes: A and C still answer management, but not each other.
        local.kill("B")
        ends = {name: urls[name] for name in "AC"}
        apart = _probe_until(pool, ends, lambda r: len(r) == 2 and all(x.seconds is None for x in r.values()),
                             "A and C unable to reach each other")
        summary = summarise(apart)
        assert summary.status()["pairs"] == "0/2 reachable"
        assert [f.split(":")[0] for f in summary.failing] == ["A -> C", "C -> A"]

        # What the status says: Degraded, naming the pairs.
        spec = parse_mesh("demo", "messaging", {"size": 1, "image": "qdmesh/router:0.1.0"})
        status = mesh_status({"metadata": {"name": "demo", "generation": 1}}, mesh_state(spec, []),
                             applied=Applied(), canary=summary)
        degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
        assert (degraded["status"], degraded["reason"]) == ("True", "CanaryFailed")
        assert degraded["message"].startswith("2 of 2 router pairs cannot reach each other through the mesh: "
                                              "A -> C: ")
        assert status["canary"]["failing"][0].startswith("A -> C: ")
    finally:
        pool.close()


def test_mode_routers_reads_what_the_routers_measured_of_their_neighbours(mesh_factory: MeshFactory) -> None:
    """spec.canary.mode Routers: the operator probes nothing; the routers measure their
    neighbours (canaryIntervalSeconds) and the operator reads it with the rest of their state
    (the same management sync), a pair per inter-router link and direction.  A frozen router's
    neighbours count it unreachable after three probes in a row go unanswered."""
    import signal

    from qdmesh_operator.apply.management import sync_mesh
    from qdmesh_operator.canary import from_routers
    from tests.mesh.test_canary import CanaryTimers
    from tests.operator.localmesh import local_state, urls

    spec = parse_mesh("demo", "messaging", {"size": 3, "image": "qdmesh/router:0.1.0",
                                            "canary": {"mode": "Routers"}})
    assert spec.canary_mode == "Routers"
    local = mesh_factory(LINE3, timers=CanaryTimers())
    state = local_state(spec, [])
    pool = ClientPool()
    links = {("demo-0", "demo-1"), ("demo-1", "demo-0"), ("demo-1", "demo-2"), ("demo-2", "demo-1")}
    try:
        def measured(check: Any) -> Dict[Tuple[str, str], PairResult]:
            deadline = time.monotonic() + 60
            while True:
                # Here the routers' own ids are A, B, C (in a cluster, the pods' names): the
                # neighbours are named by the operator's ids, as the outcomes are.
                names = {r: f"demo-{i}" for i, r in enumerate("ABC")}
                found = {(a, names.get(b, b)): v
                         for (a, b), v in from_routers(sync_mesh(state, urls(local), pool=pool)).items()}
                if check(found):
                    return found
                assert time.monotonic() < deadline, f"routers' measurements: {found}"
                time.sleep(0.5)

        found = measured(lambda r: set(r) == links and all(x.seconds for x in r.values()))
        assert summarise(found).status()["pairs"] == "4/4 reachable"
        local["C"].send_signal(signal.SIGSTOP)
        try:
            frozen = measured(lambda r: r.get(("demo-1", "demo-2")) is not None
                              and r[("demo-1", "demo-2")].seconds is None)
            assert "unanswered" in frozen[("demo-1", "demo-2")].error
            assert frozen[("demo-0", "demo-1")].seconds is not None
        finally:
            local["C"].send_signal(signal.SIGCONT)
    finally:
        pool.close()
