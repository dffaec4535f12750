"""No native leaks under churn: a router that clients reconnect to all day, or that attaches
and detaches links all day on one connection, stays the same size; and bench/soak.py's
60-second version (every kind of churn at once) accounts for every unsettled message and
gives back every file descriptor; and edge routers attaching to an interior router and
leaving leave nothing behind.

Before the fix each connection leaked 1.5-5 KB of proton's memory (about 30 MB per 10,000
of these), which these tests catch by a factor of ten."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict

import pytest

from .routerproc import REPO_ROOT, Router, RouterFactory

BENCH = REPO_ROOT / "bench"
# Loose enough for a busy CI machine, tight enough for the old leak (~30 MB per 10,000):
# growth may be up to 1 MB (the allocator taking one more arena) plus 2 MB per 10,000.
MAX_MB_PER_10K = 2.0
SLACK_MB = 1.0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def run_client(workload: str, url: str, seconds: float) -> Dict[str, Any]:
    """bench/soak_clients.py as fast as the router takes it, for ``seconds``."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "soak_clients.py"), workload, "--url", url, "--rate", "2000",
         "--concurrency", "40", "--duration", str(seconds), "--address", f"closest/{workload}"],
        capture_output=True, text=True, timeout=seconds + 60)
    assert done.returncode == 0, done.stderr[-2000:]
    result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.timeout(180)
@pytest.mark.parametrize("workload, unit", [("churn", "connections"), ("links", "links")])
def test_router_stays_the_same_size_under_churn(router_factory: RouterFactory, workload: str,
                                                 unit: str) -> None:
    router: Router = router_factory()
    url = router.url.replace("amqp://", "")
    warm = run_client(workload, url, 10)  # allocator pools and caches reach their size
    time.sleep(1)
    before, fds_before = rss_mb(router.pid), fds(router.pid)
    measured = run_client(workload, url, 25)
    time.sleep(1)
    after, fds_after = rss_mb(router.pid), fds(router.pid)
    count = measured[unit]
    assert count >= 1000, f"only {count} {unit} in 25 s: too few to judge ({measured})"
    allowed = SLACK_MB + MAX_MB_PER_10K * count / 10_000
    assert after - before < allowed, (
        f"RSS grew {after - before:.1f} MB over {count} {unit} ({before:.1f} -> {after:.1f} MB; "
        f"allowed {allowed:.1f})")
    for result in (warm, measured):
        assert result["unaccounted"] == 0 and result["pending"] == 0 and result["lost"] == 0, result
        assert result["accepted"] == result["sent_unsettled"] > 0, result
    assert fds_after == fds_before, f"{fds_before} fds before the churn, {fds_after} after"


@pytest.mark.timeout(180)
def test_soak_for_a_minute(tmp_path: Path) -> None:
    """bench/soak.py, 60 s on one router: connection, link and reply-to churn, management
    polling, traffic through multicast, balanced and closest addresses, refused and garbage
    connections, all at once."""
    out = tmp_path / "soak"
    done = subprocess.run([sys.executable, str(BENCH / "soak.py"), "--duration", "60", "--warmup", "30",
                           "--sample", "2", "--out", str(out)],
                          cwd=str(BENCH), capture_output=True, text=True, timeout=170)
    result = json.loads((out / "soak.json").read_text())
    assert (out / "soak.svg").read_text().startswith("<svg"), "no plot"
    totals = result["totals"]
    # Every unsettled message has its outcome at its sender; none was lost or left pending.
    assert totals["sent_unsettled"] > 1000, totals
    assert totals["unaccounted"] == 0 and totals["pending"] == 0 and totals["lost"] == 0, totals
    assert totals["accepted"] + totals["released"] + totals["modified"] + totals["rejected"] \
        == totals["sent_unsettled"], totals
    assert result["refused_connections"] > 0 and result["refused_failed"] == 0, result["refused_failed"]
    assert result["garbage_connections"] > 0 and result["management_requests"] > 0
    assert result["fds"]["R"]["after"] == result["fds"]["R"]["before"], result["fds"]
    # The leak test: the second 30 s (after warm-up) grows RSS by less than 2 MB per 10,000
    # connections.
    rows = [s for s in result["samples"] if s["router"] == "R" and "rss_kb" in s and s["t"] <= 60]
    first = min((s for s in rows if s["t"] >= 30), key=lambda s: s["t"])
    last = max(rows, key=lambda s: s["t"])
    connections = totals["connections"] * (last["t"] - first["t"]) / 60
    grown_mb = (last["rss_kb"] - first["rss_kb"]) / 1024
    assert grown_mb < SLACK_MB + MAX_MB_PER_10K * connections / 10_000, (
        f"RSS grew {grown_mb:.1f} MB in the second 30 s ({connections:.0f} connections)")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.timeout(120)
def test_edge_churn_leaves_nothing_behind(tmp_path: Path) -> None:
    """bench/soak.py --topology edges, briefly: C edge routers (cheap to start) attach to a
    qdmesh interior router and leave, five at a time, each with an id never seen before. After
    warm-up, neither Python objects nor RSS may grow with the edges: a per-edge record never
    dropped (address tracking, `_edge/<id>`, a dict keyed by edge id) would show as objects,
    an unfreed proton object as RSS."""
    from tests.interop.cpeer import require_c_router

    c_router = require_c_router()
    out = tmp_path / "edges"
    cycles, warmup, per_cycle = 20, 5, 5
    # warning+: qdmesh keeps its last 1,000 log records for management, some 6 an edge, which
    # would fill over the first 180 edges, longer than this test.
    argv = [sys.executable, str(BENCH / "soak.py"), "--topology", "edges", "--edge-interiors", "Q",
            "--edge-cycles", str(cycles), "--edge-warmup", str(warmup), "--edges-per-cycle", str(per_cycle),
            "--interior-log", "warning+", "--c-router", str(c_router), "--out", str(out)]
    done = subprocess.run(argv, cwd=str(BENCH), capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / "soak.json").read_text())
    samples = result["samples"]
    rows = sorted((s for s in samples if s["router"] == "Q" and "rss_kb" in s and s["cycle"] >= warmup),
                  key=lambda s: s["cycle"])
    start, end = rows[0], rows[-1]
    edges = end["edges"] - start["edges"]
    assert edges == (cycles - warmup) * per_cycle
    # Python's objects saw-tooth by up to a hundred or so (bounded memos of management's reply
    # addresses filling and emptying), so: the least of the last five samples against the most
    # of the first five. Two objects an edge left behind would be 150.
    objects = min(s["py_objects"] for s in rows[-5:]) - max(s["py_objects"] for s in rows[:5])
    assert objects < 2 * edges, f"{objects} more Python objects after {edges} edges ({rows})"
    # RSS: the allocator may take one more arena; a leak of the old kind (an edge's connection
    # and links, 5-50 KB) would be 0.5-5 MB.
    grown_kb = end["rss_kb"] - start["rss_kb"]
    assert grown_kb < 1024 + 2 * edges, f"RSS grew {grown_kb} KiB over {edges} edge connections"
