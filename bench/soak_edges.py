"""bench/soak.py's edge churn (`--topology edges`): edge routers attach to an interior router
and leave, cycle after cycle, while the interior router is watched for leaks.

    cd bench && python soak.py --topology edges --edge-cycles 200 --edges-per-cycle 10 \\
        --edge-interiors Q,C --edge-kind C

One interior router of each kind in --edge-interiors (Q qdmesh, C the C router), each with a
listener `role: edge`. A cycle starts --edges-per-cycle edge routers of --edge-kind (C: the C
router, cheap to start; Q: qdmesh, a Python process each) with a connector `role: edge` to
the interior router, each with an id never used before (so state kept per edge id would pile
up), polls the interior router's connection table (a management connection per poll) until
every edge is listed, stops them (SIGTERM) and polls until none is. Then it samples the
interior router's RSS (and, for qdmesh, the objects Python's collector tracks). The cycles of
the interior routers alternate, so both see the same machine load. Growth: the least-squares
slope of RSS over the edge connections made after the warm-up cycles, per 1,000 edge
connections.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from processes import HOST, free_port

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DEFAULT_C_ROUTER = Path.home() / ".cache" / "qdr-1.19.0" / "bin" / "qdrouterd-c"
KINDS = {"Q": "qdmesh", "C": "qdrouterd 1.19 (C)"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--edge-cycles", type=int, default=200, help="edges: cycles of attach and leave")
    p.add_argument("--edges-per-cycle", type=int, default=10)
    p.add_argument("--edge-interiors", default="Q,C",
                   help="edges: interior routers, alternating cycles (Q qdmesh, C the C router)")
    p.add_argument("--edge-kind", choices=("C", "Q"), default="C", help="edges: the edge routers' kind")
    p.add_argument("--edge-warmup", type=int, default=None,
                   help="edges: cycles left out of the growth (default: a fifth)")
    p.add_argument("--c-router", default=os.environ.get("QDROUTERD_C", str(DEFAULT_C_ROUTER)))
    p.add_argument("--edge-timeout", type=float, default=60.0, help="edges: seconds to attach or leave")
    p.add_argument("--interior-log", default=None,
                   help="edges: the interior routers' log level (e.g. warning+: no records of each edge "
                        "in qdmesh's ring of the last 1,000, which fills over the first ~180 edges)")


def edge_config(edge_id: str, interior_edge_port: int) -> str:
    return json.dumps([
        ["router", {"mode": "edge", "id": edge_id, "workerThreads": 1}],
        ["connector", {"host": HOST, "port": str(interior_edge_port), "role": "edge",
                       "saslMechanisms": "ANONYMOUS"}],
    ], indent=1)


def router_argv(args: argparse.Namespace, kind: str, config: Path) -> List[str]:
    if kind == "C":
        return [args.c_router, "-c", str(config)]
    return [args.python, "-m", "qdrouter", "-c", str(config)]


class EdgeCount:
    """The interior router's edge connections (its connection table), a new management
    connection per poll, as qdstat -c would."""

    def __init__(self, url: str) -> None:
        sys.path.insert(0, str(REPO / "router"))
        from qdrouter.tools.management_client import ManagementClient

        self.client_class = ManagementClient
        self.url = url
        self.polls = 0

    def __call__(self) -> int:
        self.polls += 1
        with self.client_class(self.url, timeout=30) as client:
            return sum(1 for row in client.query("connection", ["role"]) if row.get("role") == "edge")


def wait_for_edges(count: EdgeCount, want: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        have = count()
        if have == want:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: {have} edge connections, not {want}, after {timeout:.0f} s")
        time.sleep(0.2)


def cycle(args: argparse.Namespace, interior: Any, count: EdgeCount, number: int, workdir: Path) -> None:
    edges: List[subprocess.Popen] = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "router"),
                                                                   os.environ.get("PYTHONPATH")])))
    try:
        for n in range(args.edges_per_cycle):
            # A new id every time: what an interior router keeps per edge id must go with the edge.
            edge_id = f"E{interior.name}-{number}-{n}"
            config = workdir / f"edge-{interior.name}-{n}.json"
            config.write_text(edge_config(edge_id, interior.edge_port))
            edges.append(subprocess.Popen(router_argv(args, args.edge_kind, config), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                          start_new_session=True))
        wait_for_edges(count, args.edges_per_cycle, args.edge_timeout, f"cycle {number} on {interior.name}")
    finally:
        for edge in edges:
            if edge.poll() is None:
                edge.send_signal(signal.SIGTERM)
        for edge in edges:
            try:
                edge.wait(20)
            except subprocess.TimeoutExpired:
                edge.kill()
                edge.wait()
    wait_for_edges(count, 0, args.edge_timeout, f"cycle {number} on {interior.name}, leaving")


def run_edges(args: argparse.Namespace, workdir: Path, router_class: Any, sample: Any) -> Dict[str, Any]:
    """The edge churn; ``router_class`` and ``sample`` are soak.py's RouterProc and sample."""
    interiors: List[Any] = []
    samples: List[Dict[str, Any]] = []
    warmup = args.edge_warmup if args.edge_warmup is not None else args.edge_cycles // 5
    try:
        for kind in args.edge_interiors.split(","):
            command = None if kind == "Q" else args.c_router
            interiors.append(router_class(args, kind, workdir, edge_port=free_port(), router_cmd=command,
                                          log_enable=args.interior_log))
        counts = {r.name: EdgeCount(r.url) for r in interiors}
        started = time.monotonic()
        samples += [dict(sample(r, started), cycle=0, edges=0) for r in interiors]
        for number in range(1, args.edge_cycles + 1):
            for interior in interiors:
                cycle(args, interior, counts[interior.name], number, workdir)
                samples.append(dict(sample(interior, started), cycle=number,
                                    edges=number * args.edges_per_cycle))
            if number % 10 == 0:
                rss = ", ".join(f"{s['router']} {s.get('rss_kb')} KiB" for s in samples[-len(interiors):])
                print(f"cycle {number}: {rss}", file=sys.stderr)
            if any(r.proc.poll() is not None for r in interiors):
                raise RuntimeError(f"an interior router died: see {workdir}")
    finally:
        for interior in interiors:
            interior.stop()
    return summarise_edges(args, workdir, samples, warmup, {r.name: counts[r.name].polls for r in interiors})


def summarise_edges(args: argparse.Namespace, workdir: Path, samples: List[Dict[str, Any]], warmup: int,
                    polls: Dict[str, int]) -> Dict[str, Any]:
    from soak import slope_per_s

    growth: Dict[str, Any] = {}
    for name in polls:
        mine = [s for s in samples if s["router"] == name and "rss_kb" in s]
        steady = [(s["edges"], s["rss_kb"]) for s in mine if s["cycle"] >= warmup]
        slope = slope_per_s(steady)  # KiB per edge connection
        checkpoints = {s["cycle"]: s["rss_kb"] for s in mine
                       if s["cycle"] in (warmup, args.edge_cycles // 4, args.edge_cycles // 2,
                                         3 * args.edge_cycles // 4, args.edge_cycles)}
        growth[name] = {
            "router": KINDS[name],
            "edge_connections_after_warmup": steady[-1][0] - steady[0][0] if steady else 0,
            "kib_per_1000_edges": round(slope * 1000, 1), "bytes_per_edge": round(slope * 1024, 1),
            "rss_kib_at_cycle": checkpoints, "management_polls": polls[name],
            "py_objects": [s.get("py_objects") for s in mine if s["cycle"] in checkpoints],
        }
    result = {"topology": "edges", "edge_cycles": args.edge_cycles, "edges_per_cycle": args.edges_per_cycle,
              "edge_kind": args.edge_kind, "warmup_cycles": warmup, "growth": growth, "samples": samples,
              "problems": [f"{g['router']}: grew {g['kib_per_1000_edges']} KiB per 1,000 edge connections"
                           for g in growth.values() if g["kib_per_1000_edges"] * args.edge_cycles
                           * args.edges_per_cycle / 1000 / 1024 > args.max_growth_mb]}
    (workdir / "soak.json").write_text(json.dumps(result, indent=1))
    (workdir / "soak.md").write_text(markdown_edges(result))
    result["workdir"] = str(workdir)
    return result


def markdown_edges(result: Dict[str, Any]) -> str:
    lines = [f"Soak: edge churn, {result['edge_cycles']} cycles of {result['edges_per_cycle']} "
             f"{KINDS[result['edge_kind']]} edge routers (warm-up {result['warmup_cycles']} cycles)", "",
             "| interior router | RSS KiB at cycle | growth per 1,000 edge connections after warm-up | "
             "per edge | Python objects |", "|---|---|---:|---:|---|"]
    for g in result["growth"].values():
        at = " / ".join(f"{c}: {kb:,}"
                        for c, kb in sorted(g["rss_kib_at_cycle"].items(), key=lambda i: int(i[0])))
        objects = " / ".join(str(o) for o in g["py_objects"] if o is not None) or "-"
        lines.append(f"| {g['router']} | {at} | {g['kib_per_1000_edges']} KiB | {g['bytes_per_edge']} B | "
                     f"{objects} |")
    lines += ["", "problems: " + ("; ".join(result["problems"]) or "none"), ""]
    return "\n".join(lines)
