#!/usr/bin/env python3
"""Memory one router spends per idle connection, link, address and mobile address learned
from the mesh: qdmesh and the C router (qdrouterd) side by side, in one run.

For each item and each router kind, each repeat starts fresh routers, holds a few items
first (so first-use costs such as loading SASL's plugins are in the base), takes the
router's RSS (/proc/PID/smaps_rollup, median of five samples), opens N more items with
bench/build/qdm-hold, waits for them to be in place, takes the RSS again: per item is the
difference over N. Reported: the median over the repeats (and the range).

* connections: N idle connections (SASL ANONYMOUS, open, no session).
* links: N receiving links on one address, spread over 4 connections.
* addresses: N receiving links, each on its own address, over 4 connections (per item:
  one address and its one link).
* mobile: two interior routers of the same kind, A and B; N receivers on distinct
  addresses attach to B and A learns them (A's addrCount). A's RSS.

Usage:  python bench/memory.py [--items connections,links,addresses,mobile] [-n N] ...
See bench/README.md.  Standard library only (Python 3.9+).
"""

from __future__ import annotations

import argparse
import datetime
import json
import resource
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

from measure import HOLD, ensure_built, proton_shim
from memory_routers import C_ROUTER, QDMESH, MeasuredRouter, start_pair, steady_rss_kib, stop_all
from processes import HOST, BenchError, Proc
from report import machine_info

ITEMS = ("connections", "links", "addresses", "mobile")
# Connections the links and addresses are spread over ("a few connections").
LINK_CONNECTIONS = 4
# Items held before the base is taken: first-use costs are not per item.
WARM_UP = 50
DEFAULT_C_ROUTER = str(Path.home() / ".cache" / "qdr-1.19.0" / "bin" / "qdrouterd-c")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Memory per idle connection, link, address and mobile address: qdmesh and the C router.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--items", default=",".join(ITEMS), help=f"comma-separated subset of {', '.join(ITEMS)}")
    p.add_argument("--count", "-n", type=int, default=5000, help="N: items opened per measurement")
    p.add_argument("--connections", type=int, default=None, help="N for idle connections (default --count)")
    p.add_argument("--repeat", "-r", type=int, default=3, help="fresh routers per item and kind; medians")
    p.add_argument("--python", default=sys.executable, help="interpreter that runs qdmesh (and qdmanage)")
    p.add_argument(
        "--router-cmd",
        default=None,
        help="qdmesh command instead of 'PYTHON -m qdrouter -c CONFIG'; {config}, {port} and "
        "{python} are substituted, '-c CONFIG' is appended if {config} is absent",
    )
    p.add_argument("--c-router", default=DEFAULT_C_ROUTER,
                   help="the C router's command (qdrouterd 1.19); '' to measure qdmesh alone")
    p.add_argument("--settle", type=float, default=2.0,
                   help="seconds between items in place and the RSS sample")
    p.add_argument("--router-start-timeout", type=float, default=30.0, help="seconds for a router to listen")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for the items to be in place")
    p.add_argument("--json", dest="json_out", default=None, help="write all results as JSON to this file")
    p.add_argument("--rebuild", action="store_true", help="rebuild the load generators first")
    args = p.parse_args(argv)
    args.item_list = [i.strip() for i in args.items.split(",") if i.strip()]
    unknown = [i for i in args.item_list if i not in ITEMS]
    if unknown or not args.item_list:
        p.error(f"unknown item(s) {unknown}; choose from {', '.join(ITEMS)}")
    if args.count < LINK_CONNECTIONS or args.repeat < 1:
        p.error(f"--count must be >= {LINK_CONNECTIONS}, --repeat >= 1")
    if args.connections is None:
        args.connections = args.count
    args.kinds = [QDMESH, C_ROUTER] if args.c_router else [QDMESH]
    return args


def raise_fd_limit(needed: int) -> None:
    """Children inherit this process's limit: the router and qdm-hold each hold one
    descriptor per connection."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise BenchError(f"{needed} open files needed per process, the hard limit is {hard} (ulimit -Hn)")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else hard, hard))


def hold(args: argparse.Namespace, router: MeasuredRouter, tag: str, connections: int, links: int,
         address: str, distinct: bool) -> Proc:
    """qdm-hold's connections and links on ``router``, once they are all in place."""
    argv = [str(HOLD), "-c", f"{HOST}:{router.port}", "-n", str(connections), "-L", str(links),
            "-a", address, "-t", str(args.timeout), "--container", f"mem-{tag}"]
    if distinct:
        argv.append("--distinct")
    holder = Proc(f"qdm-hold {tag}", argv)
    try:
        holder.wait_event("ready", args.timeout + 10)
    except BaseException:
        holder.kill()
        holder.close()
        raise
    return holder


def spread(n: int) -> int:
    return max(1, n // LINK_CONNECTIONS)


def measure_once(args: argparse.Namespace, kind: str, item: str, workdir: Path) -> Dict[str, Any]:
    """One fresh router (pair), warm-up, base, N items, after: bytes per item."""
    holders: List[Proc] = []
    n = args.connections if item == "connections" else spread(args.count) * LINK_CONNECTIONS
    if item == "mobile":
        routers = start_pair(args, kind, workdir)
    else:
        routers = [MeasuredRouter(args, kind, workdir, "M")]
    measured, clients = routers[0], routers[-1]
    try:
        known = measured.counts()["addrCount"] if item == "mobile" else 0
        if item == "connections":
            holders.append(hold(args, clients, "warm", WARM_UP, 0, "mem/conn", False))
        elif item == "links":
            holders.append(hold(args, clients, "warm", 1, WARM_UP, "mem/links", False))
        else:
            holders.append(hold(args, clients, "warm", 1, WARM_UP, "mem/warm", True))
        if item == "mobile":
            # The warm-up's addresses reaching A also says the mesh is up.
            measured.wait_for_count("addrCount", known + WARM_UP, args.timeout)
            known = measured.counts()["addrCount"]
        time.sleep(args.settle)
        measured.check_alive()
        base = steady_rss_kib(measured.pid)
        started = time.monotonic()
        if item == "connections":
            holders.append(hold(args, clients, "n", n, 0, "mem/conn", False))
        elif item == "links":
            holders.append(hold(args, clients, "n", LINK_CONNECTIONS, spread(args.count), "mem/links", False))
        else:
            holders.append(hold(args, clients, "n", LINK_CONNECTIONS, spread(args.count), f"mem/{item}",
                                True))
        if item == "mobile":
            measured.wait_for_count("addrCount", known + n, args.timeout)
        in_place_s = time.monotonic() - started
        time.sleep(args.settle)
        for router in routers:
            router.check_alive()
        after = steady_rss_kib(measured.pid)
    finally:
        for holder in reversed(holders):
            holder.kill(grace=5.0)
            holder.close()
        stop_all(routers)
    per_item = (after - base) * 1024 / n
    print(f"memory: {kind:9s} {item:12s} N={n}: RSS {base / 1024:.1f} -> {after / 1024:.1f} MiB, "
          f"{per_item:,.0f} B per item (in place in {in_place_s:.1f} s)", file=sys.stderr)
    return {"kind": kind, "item": item, "n": n, "base_rss_kib": base, "rss_kib": after,
            "bytes_per_item": per_item, "in_place_seconds": in_place_s}


def summarize(runs: List[Dict[str, Any]], kinds: Sequence[str], items: Sequence[str]) -> List[Dict[str, Any]]:
    rows = []
    for item in items:
        row: Dict[str, Any] = {"item": item}
        for kind in kinds:
            values = [r["bytes_per_item"] for r in runs if r["kind"] == kind and r["item"] == item]
            bases = [r["base_rss_kib"] for r in runs if r["kind"] == kind and r["item"] == item]
            n = next(r["n"] for r in runs if r["kind"] == kind and r["item"] == item)
            row[kind] = {"median": statistics.median(values), "min": min(values), "max": max(values),
                         "n": n, "base_rss_mib": statistics.median(bases) / 1024}
        rows.append(row)
    return rows


LABELS = {
    "connections": "idle connection",
    "links": "link (receivers on one address, 4 connections)",
    "addresses": "address (a receiver on each, 4 connections)",
    "mobile": "mobile address learned from the other router",
}


def markdown(rows: List[Dict[str, Any]], kinds: Sequence[str]) -> str:
    def cell(entry: Dict[str, Any]) -> str:
        return f"{entry['median']:,.0f} ({entry['min']:,.0f}-{entry['max']:,.0f})"

    head = "| per | N | " + " | ".join(f"{k}, bytes" for k in kinds)
    head += " | qdmesh / C router |" if len(kinds) == 2 else " |"
    lines = [head, "|---" * (2 + len(kinds) + (1 if len(kinds) == 2 else 0)) + "|"]
    for row in rows:
        first = row[kinds[0]]
        line = f"| {LABELS[row['item']]} | {first['n']:,} | " + " | ".join(cell(row[k]) for k in kinds)
        if len(kinds) == 2:
            other = row[kinds[1]]["median"]
            line += f" | {first['median'] / other:.2f} |" if other > 0 else " | - |"
        else:
            line += " |"
        lines.append(line)
    bases = ", ".join(f"{k} {rows[0][k]['base_rss_mib']:.1f} MiB" for k in kinds)
    lines.append("")
    lines.append(f"Base RSS (with the warm-up's items): {bases}.")
    return "\n".join(lines)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM too stops the routers and clients this run started


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        raise_fd_limit(args.connections + 1000)
        ensure_built(args.rebuild)
        shim = proton_shim(args.python) if not args.router_cmd else "(--router-cmd)"
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    started = datetime.datetime.now().astimezone()
    header = (f"{started:%Y-%m-%d %H:%M %Z}; {machine_info()}; N={args.count} "
              f"(connections {args.connections}) repeat={args.repeat}; qdmesh: "
              f"{args.router_cmd or args.python + ' -m qdrouter'} (proton shim: {shim})"
              + (f"; C router: {args.c_router}" if args.c_router else ""))
    print(f"# {header}", file=sys.stderr)
    runs: List[Dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="qdm-memory-") as tmp:
            for rep in range(args.repeat):
                for item in args.item_list:
                    for kind in args.kinds:
                        print(f"[{rep + 1}/{args.repeat}] {kind} {item}", file=sys.stderr)
                        runs.append(measure_once(args, kind, item, Path(tmp)))
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    rows = summarize(runs, args.kinds, args.item_list)
    print(f"\n_{header}_\n")
    print(markdown(rows, args.kinds))
    if args.json_out:
        doc = {"started": started.isoformat(), "machine": machine_info(), "header": header,
               "args": {k: v for k, v in vars(args).items()}, "summary": rows, "runs": runs}
        Path(args.json_out).write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
