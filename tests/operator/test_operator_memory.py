"""The operator's memory is a function of what exists, not of history: ``qdmesh-operator`` as a
process against a REAL API server, two meshes, one backed by a real local router (its
management connection and live changes included); cycles of routing resources made and deleted
leave the operator's traced allocations and resident set where the first cycles left them
(meshes made and deleted by the hundred: bench/operator_soak.py).  Both measurements are taken
the same way after the same quiet time, so what is only in flight at that moment (kopf's
per-object workers, which end a few seconds after their object's last event) is in both and
cancels out; what is kept per object made, per request or per management call adds up over
the cycles."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import tracemalloc
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, List

import pytest

from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import Cluster, eventually
from tests.operator.localmesh import names_on
from tests.reaper import stop_process
from tests.router.routerproc import free_port

pytestmark = pytest.mark.timeout(600)

#: Cycles between the two measurements, each making and deleting six routing resources.
CYCLES = 5
#: The mesh with a router (its management connection, live changes) and one without.
MESHES = ("live", "quiet")
#: Traced growth of the operator's and kopf's allocations over the cycles that fails the test.
#: Between two quiet moments the traced total moves by 0.3-0.9 MiB on a loaded machine
#: whatever the number of cycles: which objects kopf's watch streams decoded last.  Each of
#: its watches (a dozen kinds) keeps the last event it read and the last object of its
#: listing in its generator's variables until the next one comes: one or two bodies per kind,
#: a StatefulSet's or a pod's far larger than a routing resource's, and the per-object workers
#: of whatever was last busy.  What the bound is for costs more: a management connection kept
#: per drift check (one a second here, 40 KiB each), a report or a set of bodies kept per
#: reconciliation or per resource.
TRACED_GROWTH_LIMIT = 2 * 1024 * 1024
#: The resident set moves with the allocator's bookkeeping too: a generous bound.
RSS_GROWTH_LIMIT_MIB = 16.0
#: Seconds after a cycle before a measurement: kopf's per-object workers end 5 s after their
#: object's last event, or after waiting as long for their own patch to come back.
QUIET_S = 12.0
ROUTING = (("linkroutes", "LinkRoute"), ("autolinks", "AutoLink"), ("vhostpolicies", "VhostPolicy"))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def spec(kind: str, mesh: str, i: int) -> dict:
    if kind == "LinkRoute":
        return {"meshRef": mesh, "prefix": f"mem{i}.", "containerId": "broker"}
    if kind == "AutoLink":
        return {"meshRef": mesh, "address": f"queue/mem{i}", "direction": "in", "containerId": "broker"}
    return {"meshRef": mesh, "hostname": f"mem{i}.example.com", "maxConnections": 10}


def observed(kube: Cluster, plural: str, name: str) -> bool:
    body = kube.get(plural, name)
    return bool((body.get("status") or {}).get("observedGeneration") == body["metadata"]["generation"])


def cycle(kube: Cluster, cycle_no: int, live_url: str = "") -> None:
    """Six routing resources (three on each mesh) made, reconciled and deleted, until the API
    server holds none of them.  Names are new each cycle: what is kept per name must go with
    the resource."""
    made = []
    for i in range(6):
        plural, kind = ROUTING[i % 3]
        name = f"c{cycle_no}-r{i}"
        kube.create(plural, kind, name, spec(kind, MESHES[i % 2], i))
        made.append((plural, name))
    for plural, name in made:
        eventually(lambda p=plural, n=name: observed(kube, p, n), 120,  # type: ignore[misc]
                   f"{plural}/{name} reconciled")
    if live_url:
        eventually(lambda: f"qdmesh/linkRoute/c{cycle_no}-r0-in" in names_on(live_url, "linkRoute"), 120,
                   "the live mesh's link route on its router")
    for plural, name in made:
        kube.delete(plural, name)
    for plural, name in made:
        eventually(lambda p=plural, n=name: kube.gone(p, n), 120, f"{plural}/{name} deleted")  # type: ignore[misc]


class TracedOperator:
    """``qdmesh-operator`` with $QDMESH_TRACEMALLOC: each ``snapshot()`` is a SIGUSR2."""

    def __init__(self, proc: subprocess.Popen, directory: Path) -> None:
        self.proc = proc
        self.directory = directory
        self.count = 0

    def snapshot(self) -> tracemalloc.Snapshot:
        self.count += 1
        path = self.directory / f"{self.proc.pid}-{self.count}.snapshot"
        self.proc.send_signal(signal.SIGUSR2)
        eventually(lambda: Path(f"{path}.done").exists(), 120, f"snapshot {path.name}")
        return tracemalloc.Snapshot.load(str(path))

    def quiet_snapshot(self) -> tuple:
        time.sleep(QUIET_S)
        return self.snapshot(), rss_mib(self.proc.pid)


def operator_growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> List[Any]:
    """What grew in allocations made by the operator's or kopf's code (any frame)."""
    keep = [tracemalloc.Filter(True, "*qdmesh_operator*", all_frames=True),
            tracemalloc.Filter(True, "*kopf*", all_frames=True),
            # The TLS buffers of the connections to the API server open at that moment (kopf's
            # pool, bounded by it), not anything kept.
            tracemalloc.Filter(False, "*asyncio/sslproto.py")]

    # Inclusive filters keep a trace that matches any of them; an exclusive one drops it.
    return [s for s in after.filter_traces(keep).compare_to(before.filter_traces(keep), "traceback")
            if s.size_diff > 0]


def test_memory_stays_flat_under_churn(crds: ControlPlane, router_factory: Callable[..., Any],
                                       tmp_path: Path) -> None:
    from kubernetes import client

    namespace = f"mem-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(crds.api_client()).create_namespace({"metadata": {"name": namespace}})
    kube = Cluster(crds, namespace)
    router = router_factory(router_id="live-0")
    urls_file = tmp_path / "urls.json"
    urls_file.write_text(json.dumps({f"{namespace}/live-0": router.url}))
    for mesh in MESHES:
        kube.create("routermeshes", "RouterMesh", mesh, {"size": 1, "image": "qdmesh/router:0.1.0"})
    health = free_port()
    env = {**crds.env(), "QDMESH_ROUTER_URLS": str(urls_file), "QDMESH_DRIFT_INTERVAL": "1",
           "QDMESH_TRACEMALLOC": str(tmp_path / "traces")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "qdmesh_operator.main", "-n", namespace, "--health-port", str(health),
         "--metrics-port", "0", "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "operator.log", "wb"))
    try:
        def alive() -> bool:
            assert proc.poll() is None, (tmp_path / "operator.log").read_text()[-3000:]
            with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=2) as reply:
                return bool(reply.status == 200)

        eventually(alive, 300, "the operator answering")
        operator = TracedOperator(proc, tmp_path / "traces")
        cycle(kube, 0, router.url)  # warm-up: every code path and kubernetes model used once
        operator.snapshot()  # tracing starts here
        cycle(kube, 1)  # what is allocated once, under tracing
        before, rss_before = operator.quiet_snapshot()
        for cycle_no in range(2, 2 + CYCLES):
            cycle(kube, cycle_no)
        after, rss_after = operator.quiet_snapshot()
        assert proc.poll() is None
    finally:
        stop_process(proc)
    grown = operator_growth(before, after)
    total = sum(s.size_diff for s in grown)
    top = "\n".join(f"{s.size_diff:+d} B {s.count_diff:+d}: {s.traceback.format()[-6:]}" for s in grown[:8])
    assert total < TRACED_GROWTH_LIMIT, f"{total} bytes more after {CYCLES} cycles:\n{top}"
    assert rss_after - rss_before < RSS_GROWTH_LIMIT_MIB, (rss_before, rss_after)
