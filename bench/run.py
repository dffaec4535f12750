#!/usr/bin/env python3
"""Throughput and latency benchmark of one qdmesh router.

For each scenario this measures, in one run, the *direct* figure (qdm-send
connected straight to a listening qdm-recv, no router) and the *router*
figure (the same clients through a freshly started router), and reports the
router's msgs/s as a ratio of the direct one together with one-way latency
percentiles.  Ratios taken in the same run on the same machine are what is
comparable across machines and over time; absolute msgs/s are not.

Usage:  python bench/run.py [--messages N] [--size S] [--python pypy3] ...
See bench/README.md.  Standard library only (Python 3.9+).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Dict, List, Sequence

import mesh
from measure import RECV as RECV
from measure import SEND as SEND
from measure import (
    build_forwarder,
    ensure_built,
    forward_argv,
    measure_direct,
    measure_forward,
    measure_relay,
    measure_router,
    proton_shim,
    router_argv,
)
from processes import BenchError
from processes import free_port as free_port
from report import machine_info, markdown_table, progress_line, scenario_summary
from scenarios import SCENARIOS, Measurement

# RECV, SEND and free_port are re-exported (`as` form) for bench/interop_check.py, which imports them
# from here.


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark one router against a direct (no router) baseline, in one run.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--messages", "-m", type=int, default=100_000, help="messages per measured run")
    p.add_argument("--size", "-s", type=int, default=100, help="message body size in bytes (>= 8)")
    p.add_argument(
        "--scenarios",
        default=",".join([*SCENARIOS, *mesh.MESH_SCENARIOS]),
        help="comma-separated subset of the single-router and mesh scenarios (see bench/README.md)",
    )
    p.add_argument(
        "--repeat", "-r", type=int, default=1, help="repeat each measurement K times, report medians"
    )
    p.add_argument("--python", default=sys.executable, help="interpreter that runs the router (e.g. pypy3)")
    p.add_argument(
        "--router-cmd",
        default=None,
        help="router command instead of 'PYTHON -m qdrouter -c CONFIG'; {config}, {port} and "
        "{python} are substituted, '-c CONFIG' is appended if {config} is absent",
    )
    p.add_argument("--direct-only", action="store_true", help="measure only the direct baselines (no router)")
    p.add_argument(
        "--relay",
        action="store_true",
        help="also measure the direct clients through a byte relay (bench/loadgen/qdm-relay): the "
        "ceiling for any process between them on these cores",
    )
    p.add_argument(
        "--forward",
        action="store_true",
        help="also measure bench/loadgen/qdm-forward where the router runs: a C forwarder on the "
        "proton-C that --python's python-qpid-proton bundles, with the router's credit rule and "
        "window (--link-capacity): what a router on that engine that only forwards reaches here "
        "(1->1 scenarios only)",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=2000,
        help="messages sent through each fresh router before measuring (0 = none)",
    )
    p.add_argument("--credit", type=int, default=1000, help="receiver credit window")
    p.add_argument(
        "--link-capacity",
        type=int,
        default=None,
        help="the router listener's linkCapacity: the credit window the router gives the sender "
        "(default: none set, so the router's default, qdrouterd's 250; directly the sender gets --credit)",
    )
    p.add_argument(
        "--idle",
        type=float,
        default=3.0,
        help="receivers stop after this many seconds without a message (balanced share, drops)",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=0.2,
        help="pause between receivers attaching and the sender starting, seconds",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="limit for each load generator run, seconds")
    p.add_argument(
        "--router-start-timeout",
        type=float,
        default=30.0,
        help="how long to wait for the router to listen, seconds",
    )
    p.add_argument("--idle-peers", type=int, default=20, help="idle-memory: inter-router peers to connect")
    p.add_argument("--idle-settle", type=float, default=5.0, help="idle-memory: seconds before sampling RSS")
    p.add_argument("--route-sizes", default="100,1000", help="routes: mesh sizes to time")
    p.add_argument("--json", dest="json_out", default=None, help="write all results as JSON to this file")
    p.add_argument("--rebuild", action="store_true", help="rebuild the load generators first")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS and n not in mesh.MESH_SCENARIOS]
    if unknown or not names:
        p.error(f"unknown scenario(s) {unknown}; choose from {', '.join([*SCENARIOS, *mesh.MESH_SCENARIOS])}")
    args.scenario_list = [SCENARIOS[n] for n in names if n in SCENARIOS]
    # Mesh scenarios start routers with qdmesh/python -m qdrouter, so not with --router-cmd.
    mesh_names = [n for n in names if n in mesh.MESH_SCENARIOS]
    args.mesh_list = [] if args.direct_only or args.router_cmd else mesh_names
    args.route_sizes = [int(x) for x in args.route_sizes.split(",") if x.strip()]
    if args.forward and not {s.name for s in args.scenario_list} <= {"1to1-presettled", "1to1-unsettled"}:
        p.error("--forward forwards 1->1 only: use it with --scenarios 1to1-presettled,1to1-unsettled")
    if args.link_capacity is not None and args.link_capacity < 1:
        p.error("--link-capacity must be >= 1")
    if args.messages < 1 or args.repeat < 1 or args.size < 8 or args.warmup < 0:
        p.error("--messages and --repeat must be >= 1, --size >= 8 (the timestamp), --warmup >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        ensure_built(args.rebuild)
        shim = "none" if args.direct_only else proton_shim(args.python)
        forwarder = build_forwarder(args.python) if args.forward else ""
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    started = datetime.datetime.now().astimezone()
    header = (
        f"{started:%Y-%m-%d %H:%M %Z}; {machine_info()}; messages={args.messages} size={args.size}B "
        f"repeat={args.repeat}; router: "
        + ("none (--direct-only)" if args.direct_only else shlex.join(router_argv(args, Path("CONFIG"), 0)))
        + (f"; linkCapacity {args.link_capacity}" if args.link_capacity and not args.direct_only else "")
        + ("; with a byte relay (qdm-relay)" if args.relay else "")
        + (f"; with the C forwarder ({shlex.join(forward_argv(args, 0))}: {forwarder})" if forwarder else "")
        + f"; proton shim: {shim}"
        + (" (built in this checkout; the router is --router-cmd's)" if args.router_cmd else "")
    )
    print(f"# {header}", file=sys.stderr)

    direct: Dict[str, List[Measurement]] = {s.name: [] for s in args.scenario_list}
    relayed: Dict[str, List[Measurement]] = {s.name: [] for s in args.scenario_list}
    forwarded: Dict[str, List[Measurement]] = {s.name: [] for s in args.scenario_list}
    routed: Dict[str, List[Measurement]] = {s.name: [] for s in args.scenario_list}
    try:
        with tempfile.TemporaryDirectory(prefix="qdm-bench-") as tmp:
            workdir = Path(tmp)
            for rep in range(args.repeat):
                for sc in args.scenario_list:
                    tag = f"[{rep + 1}/{args.repeat}] {sc.name}"
                    d = measure_direct(args, sc, workdir)
                    direct[sc.name].append(d)
                    print(progress_line(tag, d), file=sys.stderr)
                    if args.relay:
                        x = measure_relay(args, sc, workdir)
                        relayed[sc.name].append(x)
                        print(progress_line(tag, x, d), file=sys.stderr)
                    if args.forward:
                        x = measure_forward(args, sc, workdir)
                        forwarded[sc.name].append(x)
                        print(progress_line(tag, x, d), file=sys.stderr)
                    if args.direct_only:
                        continue
                    r = measure_router(args, sc, workdir)
                    routed[sc.name].append(r)
                    print(progress_line(tag, r, d), file=sys.stderr)
            mesh_results = mesh.run_mesh(args, args.mesh_list, workdir)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

    summaries = [
        scenario_summary(sc, direct[sc.name], routed[sc.name], relayed[sc.name], forwarded[sc.name])
        for sc in args.scenario_list
    ]
    print(f"\n_{header}_\n")
    if args.scenario_list:
        print(markdown_table(summaries, args.direct_only, args.relay, args.forward))
    if mesh_results:
        print("\n" + mesh.markdown(mesh_results))

    if args.json_out:
        doc = {
            "started": started.isoformat(),
            "machine": machine_info(),
            "args": {k: v for k, v in vars(args).items() if k != "scenario_list"},
            "router_cmd": None if args.direct_only else router_argv(args, Path("CONFIG"), 0),
            "summary": summaries,
            "mesh": mesh_results,
            "runs": {
                name: {
                    "direct": [asdict(m) for m in direct[name]],
                    "relay": [asdict(m) for m in relayed[name]],
                    "forward": [asdict(m) for m in forwarded[name]],
                    "router": [asdict(m) for m in routed[name]],
                }
                for name in direct
            },
        }
        Path(args.json_out).write_text(json.dumps(doc, indent=2) + "\n")
    return 0




if __name__ == "__main__":
    sys.exit(main())
