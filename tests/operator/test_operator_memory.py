"""The operator's memory is a function of what exists, not of history: ``qdmesh-operator`` as a
process against a REAL API server, one mesh backed by a real local router; the same rounds of
meshes and routing resources made and deleted again and again leave its memory where the
first rounds left it (Python's allocations traced by tracemalloc, and the resident set)."""

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

pytestmark = pytest.mark.timeout(1800)

#: Python allocations of the operator's and kopf's code that may outlive the measured rounds.
#: About 250 KiB a round still does (watch-event bodies decoded in kopf's watcher outlive the
#: deleted objects; docs/operator.md, "Memory and scale"): the limit holds that residue and
#: catches anything kept per management connection, request or mesh, which cost megabytes.
TRACED_GROWTH_LIMIT = 2 * 1024 * 1024
#: The resident set may move with the allocator's own bookkeeping, not with history.
RSS_GROWTH_LIMIT_MIB = 12.0
ROUNDS = 3
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


def churn(kube: Cluster, round_no: int, live_url: str = "") -> None:
    """Two meshes and six routing resources (three on the live mesh) made, reconciled and
    deleted.  Mesh names are new each round (what is kept per mesh must go with it);
    routing resource names repeat."""
    meshes = [f"churn{round_no}-{i}" for i in range(2)]
    for name in meshes:
        kube.create("routermeshes", "RouterMesh", name, {"size": 1, "image": "qdmesh/router:0.1.0"})
    made = []
    for i in range(6):
        plural, kind = ROUTING[i % 3]
        mesh = "live" if i < 3 else meshes[i % 2]
        kube.create(plural, kind, f"r{i}", spec(kind, mesh, i))
        made.append((plural, f"r{i}"))
    for plural, name in [*made, *(("routermeshes", m) for m in meshes)]:
        eventually(lambda p=plural, n=name: observed(kube, p, n), 300,  # type: ignore[misc]
                   f"{plural}/{name} reconciled")
    if live_url:
        eventually(lambda: "qdmesh/linkRoute/r0-in" in names_on(live_url, "linkRoute"), 300,
                   "the live mesh's link route on its router")
    for plural, name in [*made, *(("routermeshes", m) for m in meshes)]:
        kube.delete(plural, name)
    for plural, name in made:
        eventually(lambda p=plural, n=name: kube.gone(p, n), 300, f"{plural}/{name} deleted")  # type: ignore[misc]
    for mesh in meshes:  # what the mesh owned goes too (the garbage collector): nothing left to watch
        selector = f"qdmesh.io/mesh={mesh}"
        eventually(lambda s=selector: not kube.apps.list_namespaced_stateful_set(  # type: ignore[misc]
            kube.ns, label_selector=s).items and not kube.core.list_namespaced_pod(
            kube.ns, label_selector=s).items, 300, f"the objects of {mesh} collected")


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
    kube.create("routermeshes", "RouterMesh", "live", {"size": 1, "image": "qdmesh/router:0.1.0"})
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
        churn(kube, 0, router.url)  # warm-up: every code path and kubernetes model used once
        operator.snapshot()  # tracing starts here
        churn(kube, 1)  # allocations made once, under tracing
        time.sleep(2)  # a drift check of the live mesh with nothing changing
        before, rss_before = operator.snapshot(), rss_mib(proc.pid)
        for round_no in range(2, 2 + ROUNDS):
            churn(kube, round_no)
        time.sleep(2)
        after, rss_after = operator.snapshot(), rss_mib(proc.pid)
        assert proc.poll() is None
    finally:
        stop_process(proc)
    grown = operator_growth(before, after)
    total = sum(s.size_diff for s in grown)
    top = "\n".join(f"{s.size_diff:+d} B {s.count_diff:+d}: {s.traceback.format()[-6:]}" for s in grown[:8])
    assert total < TRACED_GROWTH_LIMIT, f"{total} bytes more after {ROUNDS} rounds:\n{top}"
    assert rss_after - rss_before < RSS_GROWTH_LIMIT_MIB, (rss_before, rss_after)
