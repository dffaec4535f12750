#!/usr/bin/env python3
"""Mesh benchmarks for bench/run.py: a line of 3 routers, route computation, idle-link memory.

* line3-presettled / line3-unsettled: sender on router 1, receiver on router 3 of a line
  started by ``qdmesh local --topology line``; each repeat measures direct, one router and the
  line back to back, so the ratios are same-run ratios.
* routes: ``qdrouter.protocol.paths`` timings on generated 100- and 1,000-router topologies,
  run in a child process under the router's interpreter (``--python``).
* idle-memory: RSS of one router before and after K idle inter-router peers (real routers)
  connect to it.

``python bench/mesh.py routes --sizes 100,1000`` prints the route timings as one JSON line.
Standard library only in this process, like run.py; proton is needed only by the routers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from measure import REPO_DIR, measure_direct, measure_router, run_clients
from processes import HOST, BenchError, Proc, free_port, wait_for_port
from report import fmt_rate, fmt_us, median_or_none
from scenarios import SCENARIOS, Measurement, Scenario

LINE3 = {"line3-presettled": "1to1-presettled", "line3-unsettled": "1to1-unsettled"}
MESH_SCENARIOS = (*LINE3, "routes", "idle-memory")
ROUTER_SRC = REPO_DIR / "router"


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROUTER_SRC), env.get("PYTHONPATH")]))
    return env


def _median(values: Sequence[float | None]) -> float | None:
    return median_or_none(values)


# ---------------------------------------------------------------------------
# Line of three


class LineOfThree:
    """`qdmesh local --routers 3 --topology line`; senders use router 1, receivers router 3."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        argv = [args.python, "-m", "qdrouter.local_mesh", "local", "--routers", "3", "--topology", "line",
                "--base-port", "0", "--id-prefix", "B", "--python", args.python,
                "--timeout", str(max(60.0, args.router_start_timeout))]
        self.proc = Proc("qdmesh local", argv, env=_env())
        # The receiver's address needs a few routing-protocol exchanges to reach router 1.
        self.settle = max(args.settle, 1.0)
        try:
            addrs = self._wait_ready(max(90.0, args.router_start_timeout * 3))
            self.port = int(addrs["B1"].rsplit(":", 1)[1])
            self.receiver_port = int(addrs["B3"].rsplit(":", 1)[1])
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> Dict[str, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = list(self.proc.tail)
            if any(line.startswith("Mesh of 3 routers ready") for line in lines):
                found = (re.match(r"\s+(\S+)\s+amqp://(\S+)", line) for line in lines)
                return {m.group(1): m.group(2) for m in found if m}
            if self.proc.returncode is not None:
                break
            time.sleep(0.1)
        raise BenchError("qdmesh local did not report a ready mesh:\n" + self.proc.stderr_tail())

    def check_alive(self) -> None:
        if self.proc.returncode is not None:
            raise BenchError("the mesh stopped during the run:\n" + self.proc.stderr_tail())

    def stop(self) -> None:
        # qdmesh stops its routers on SIGTERM (SIGKILL after 5 s); give it time to do so.
        self.proc.kill(grace=20.0)
        self.proc.close()


def measure_line3(args: argparse.Namespace, sc: Scenario, workdir: Path) -> Measurement:
    mesh = LineOfThree(args, workdir)
    try:
        if args.warmup > 0:
            run_clients(args, sc, "warmup", args.warmup, workdir, mesh)  # type: ignore[arg-type]
        return run_clients(args, sc, "line3", args.messages, workdir, mesh)  # type: ignore[arg-type]
    finally:
        mesh.stop()


def line3(args: argparse.Namespace, name: str, workdir: Path) -> Dict[str, Any]:
    sc = SCENARIOS[LINE3[name]]
    rows: List[Tuple[Measurement, Measurement, Measurement]] = []
    for rep in range(args.repeat):
        tag = f"[{rep + 1}/{args.repeat}] {name}"
        d = measure_direct(args, sc, workdir)
        s = measure_router(args, sc, workdir)
        m = measure_line3(args, sc, workdir)
        rows.append((d, s, m))
        print(f"{tag}: direct {d.msgs_per_sec:,.0f}, one router {s.msgs_per_sec:,.0f}, line of 3 "
              f"{m.msgs_per_sec:,.0f} msgs/s ({m.msgs_per_sec / s.msgs_per_sec:.0%} of one router); "
              f"line p50 {fmt_us(m.p50_us)} µs, p99 {fmt_us(m.p99_us)} µs, lost {m.lost}",
              file=sys.stderr)
    return {
        "scenario": name,
        "title": f"line of 3, {'pre-settled' if sc.presettled else 'unsettled'}",
        "direct_msgs_per_sec": _median([d.msgs_per_sec for d, _, _ in rows]),
        "single_msgs_per_sec": _median([s.msgs_per_sec for _, s, _ in rows]),
        "single_p50_us": _median([s.p50_us for _, s, _ in rows]),
        "single_p99_us": _median([s.p99_us for _, s, _ in rows]),
        "line3_msgs_per_sec": _median([m.msgs_per_sec for _, _, m in rows]),
        "line3_msgs_per_sec_range": [min(m.msgs_per_sec for _, _, m in rows),
                                     max(m.msgs_per_sec for _, _, m in rows)],
        "line3_p50_us": _median([m.p50_us for _, _, m in rows]),
        "line3_p99_us": _median([m.p99_us for _, _, m in rows]),
        "ratio_to_single": _median([m.msgs_per_sec / s.msgs_per_sec for _, s, m in rows if s.msgs_per_sec]),
        "ratio_to_direct": _median([m.msgs_per_sec / d.msgs_per_sec for d, _, m in rows if d.msgs_per_sec]),
        "line3_lost": max(m.lost for _, _, m in rows),
        "repeats": len(rows),
        "runs": [{"direct": d.msgs_per_sec, "single": s.msgs_per_sec, "line3": m.msgs_per_sec}
                 for d, s, m in rows],
    }


# ---------------------------------------------------------------------------
# Route computation (runs inside the child: `python bench/mesh.py routes`)


def random_topology(n: int, seed: int) -> Dict[str, Dict[str, int]]:
    """Ring plus n random chords, costs 1..10 (as docs/routing-protocol.md measured)."""
    rnd = random.Random(seed)
    names = [f"R{i:04d}" for i in range(n)]
    ls: Dict[str, Dict[str, int]] = {name: {} for name in names}
    pairs = [(names[i], names[(i + 1) % n]) for i in range(n)]
    pairs += [(a, b) for a, b in (rnd.sample(names, 2) for _ in range(n))]
    for a, b in pairs:
        ls[a][b] = ls[b][a] = rnd.randint(1, 10)
    return ls


def chords_topology(n: int) -> Dict[str, Dict[str, int]]:
    """qdmesh local's large-mesh shape: each router links to the next two, unit costs."""
    names = [f"R{i:04d}" for i in range(n)]
    ls: Dict[str, Dict[str, int]] = {name: {} for name in names}
    for i in range(n):
        for k in (1, 2):
            ls[names[i]][names[(i + k) % n]] = ls[names[(i + k) % n]][names[i]] = 1
    return ls


def time_routes(sizes: Sequence[int], repeat: int) -> List[Dict[str, Any]]:
    from qdrouter.protocol.paths import build_graph, compute_routes, compute_valid_origins

    results = []
    for n in sizes:
        for shape, ls in (("random", random_topology(n, 1)), ("chords", chords_topology(n))):
            names = sorted(ls)
            graph_ms, routes_ms, vo_ms = [], [], []
            for rep in range(repeat):
                me = names[(rep * n) // max(1, repeat)]  # a different router's view each time
                t0 = time.perf_counter()
                graph = build_graph(ls)
                t1 = time.perf_counter()
                routes, _radius = compute_routes(me, graph)
                t2 = time.perf_counter()
                vo = compute_valid_origins(me, graph, routes)
                t3 = time.perf_counter()
                assert len(routes) == n - 1 and len(vo) == n - 1
                graph_ms.append((t1 - t0) * 1e3)
                routes_ms.append((t2 - t1) * 1e3)
                vo_ms.append((t3 - t2) * 1e3)
            results.append({"routers": n, "shape": shape, "links": sum(map(len, ls.values())) // 2,
                            "graph_ms": graph_ms, "routing_table_ms": routes_ms, "valid_origins_ms": vo_ms})
    return results


def routes(args: argparse.Namespace) -> Dict[str, Any]:
    argv = [args.python, str(Path(__file__).resolve()), "routes", "--sizes",
            ",".join(map(str, args.route_sizes)), "--repeat", str(max(5, args.repeat))]
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=1800)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise BenchError(f"route timing failed ({shlex.join(argv)}):\n{proc.stderr[-2000:]}")
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    for r in rows:
        print(f"routes: {r['routers']} routers ({r['shape']}, {r['links']} links): graph "
              f"{statistics.median(r['graph_ms']):.1f} ms, routing table "
              f"{statistics.median(r['routing_table_ms']):.1f} ms, valid origins "
              f"{statistics.median(r['valid_origins_ms']):.0f} ms", file=sys.stderr)
    return {"scenario": "routes", "python": args.python, "results": rows}


# ---------------------------------------------------------------------------
# Memory per idle inter-router connection


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for pid {pid}")


def known_routers(args: argparse.Namespace, port: int) -> int:
    argv = [args.python, "-m", "qdrouter.tools.qdmanage", "-b", f"{HOST}:{port}", "query",
            "--type", "router.node", "id"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=60)
    return len(json.loads(proc.stdout)) if proc.returncode == 0 else -1


def settled_rss(args: argparse.Namespace, pid: int, port: int, want: int, settle: float) -> int:
    deadline = time.monotonic() + 120
    while known_routers(args, port) != want:
        if time.monotonic() > deadline:
            raise BenchError(f"the hub did not learn {want} routers within 120 s")
        time.sleep(0.5)
    time.sleep(settle)  # let start-up garbage be collected and link-state exchanges finish
    known_routers(args, port)  # the same management work before every sample
    samples = []
    for _ in range(5):
        samples.append(rss_kib(pid))
        time.sleep(0.2)
    return int(statistics.median(samples))


def idle_memory(args: argparse.Namespace, workdir: Path) -> Dict[str, Any]:
    sys.path.insert(0, str(ROUTER_SRC))
    from qdrouter.local_mesh import RouterSpec, render_config

    k = args.idle_peers
    ports = [free_port() for _ in range(k + 2)]
    hub = RouterSpec(1, "hub", ports[0], ports[1], ())
    peers = [RouterSpec(i + 2, f"peer{i + 1}", ports[i + 2], None, (1,)) for i in range(k)]
    specs = [hub, *peers]
    procs: List[Proc] = []

    def start(spec: RouterSpec) -> Proc:
        conf = workdir / f"idle-{spec.router_id}.conf"
        conf.write_text(render_config(spec, specs))
        p = Proc(spec.router_id, [args.python, "-m", "qdrouter", "-c", str(conf)], env=_env())
        procs.append(p)
        return p

    try:
        hub_proc = start(hub)
        wait_for_port(hub.port, hub_proc, args.router_start_timeout)
        pid = hub_proc.popen.pid
        base = settled_rss(args, pid, hub.port, 0, args.idle_settle)
        half = k // 2
        points = [(0, base)]
        for batch in (peers[:half], peers[half:]):
            for spec in batch:
                start(spec)
            n = points[-1][0] + len(batch)
            points.append((n, settled_rss(args, pid, hub.port, n, args.idle_settle)))
            print(f"idle-memory: hub RSS {points[-1][1] / 1024:.1f} MiB with {n} idle peers "
                  f"(base {base / 1024:.1f} MiB)", file=sys.stderr)
        for p in procs:
            if p.returncode is not None:
                raise BenchError(f"{p.name} exited during the run:\n{p.stderr_tail()}")
    finally:
        for p in reversed(procs):
            p.kill(grace=5.0)
            p.close()
    (n1, r1), (n2, r2) = points[1], points[2]
    return {"scenario": "idle-memory", "peers": k, "points_kib": points, "base_rss_kib": base,
            "per_connection_kib": (r2 - base) / n2,
            "per_connection_kib_second_half": (r2 - r1) / (n2 - n1) if n2 > n1 else None}


# ---------------------------------------------------------------------------


def run_mesh(args: argparse.Namespace, names: Sequence[str], workdir: Path) -> List[Dict[str, Any]]:
    out = []
    for name in names:
        if name in LINE3:
            out.append(line3(args, name, workdir))
        elif name == "routes":
            out.append(routes(args))
        elif name == "idle-memory":
            out.append(idle_memory(args, workdir))
    return out


def _ms(v: float) -> str:
    return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def markdown(results: List[Dict[str, Any]]) -> str:
    parts = []
    lines = [r for r in results if r["scenario"] in LINE3]
    if lines:
        t = ["| scenario | direct msgs/s | 1 router msgs/s | line of 3 msgs/s (range) | line/1 router "
             "| line/direct | 1 router p50/p99 µs | line p50/p99 µs | lost |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in lines:
            lo, hi = r["line3_msgs_per_sec_range"]
            t.append(f"| {r['title']} | {fmt_rate(r['direct_msgs_per_sec'])} "
                     f"| {fmt_rate(r['single_msgs_per_sec'])} | {fmt_rate(r['line3_msgs_per_sec'])} "
                     f"({lo:,.0f}-{hi:,.0f}) | {r['ratio_to_single']:.0%} | {r['ratio_to_direct']:.1%} "
                     f"| {fmt_us(r['single_p50_us'])} / {fmt_us(r['single_p99_us'])} "
                     f"| {fmt_us(r['line3_p50_us'])} / {fmt_us(r['line3_p99_us'])} "
                     f"| {r['line3_lost']} |")
        parts.append("\n".join(t))
    for r in results:
        if r["scenario"] == "routes":
            t = ["| routers | shape | links | graph build ms | routing table ms | valid origins ms |",
                 "|---:|---|---:|---:|---:|---:|"]
            for x in r["results"]:
                # Median (min-max): the views of different routers, and a JIT warming up, differ.
                cells = [f"{_ms(statistics.median(x[k]))} ({_ms(min(x[k]))}-{_ms(max(x[k]))})"
                         for k in ("graph_ms", "routing_table_ms", "valid_origins_ms")]
                t.append(f"| {x['routers']:,} | {x['shape']} | {x['links']:,} | {' | '.join(cells)} |")
            parts.append("\n".join(t))
        elif r["scenario"] == "idle-memory":
            half = r["per_connection_kib_second_half"]
            parts.append(f"Idle inter-router connections: hub RSS {r['base_rss_kib'] / 1024:.1f} MiB alone, "
                         + ", ".join(f"{kib / 1024:.1f} MiB with {n}" for n, kib in r["points_kib"][1:])
                         + f" peers: {r['per_connection_kib']:.0f} KiB per connection"
                         + ("" if half is None else f" ({half:.0f} KiB for the second half)"))
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Route computation timings (child of bench/run.py).")
    p.add_argument("what", choices=["routes"])
    p.add_argument("--sizes", default="100,1000")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROUTER_SRC))
    print(json.dumps(time_routes([int(x) for x in args.sizes.split(",")], args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
