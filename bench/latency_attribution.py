#!/usr/bin/env python3
"""Where a router's slowest messages at a fixed rate lost their time.

Runs 1->1 unsettled at ``--rate`` through routers of several kinds, interleaved, ``--repeat``
times: the C router ("C") and qdmesh from one or more checkouts (``--q NAME=ROUTER_DIR``, with
optional ``,VAR=VALUE`` environment settings), each qdmesh run with QDROUTER_LOOP_TRACE
(router/qdrouter/tuning/loop_trace.py) so the router records its loop turns and garbage
collections. For every run it prints p50/p99/p99.9 and, for qdmesh, what the router was doing
while each message at or above the run's p99.9 was in flight:

* gc: a cyclic collection ran while it was in flight (and how long the longest took);
* turn: a loop turn (without a collection) longer than 500 µs did;
* tick: the 0.5 s tick's turn did;
* late read: the router read it more than 500 µs after it was due, in none of the above (the
  sender, the kernel or the scheduler held it before the router had it);
* late delivery: read in time, none of the above, received late (the router's write, the
  kernel, the receiver or the scheduler after the router);

and the router's own figures: turn durations (wall and CPU), messages read per turn, the
tick's own CPU, collections by generation (CPU), what a forced full collection costs, and what
the young collections found unreachable. These do not depend on the machine's noise the way
latencies do. For every kind it also prints when in the run the slowest messages were due
(``slow_due_ms``, in 10 ms bins): one stall shows as one bin, a periodic one as a series.
The router's CPU per message is read from /proc around the measured run.

On a shared host, ``--fifo PRIORITY`` runs routers and clients under SCHED_FIFO (``chrt -f``):
other work cannot preempt them, and the figures are the routers' rather than the host's.

    python bench/latency_attribution.py --rate 10000 --duration 5 --repeat 5 --fifo 20 \\
        --q before=/work/main/router --q after=router
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from measure import RECV, SEND, ensure_built, proton_shim
from memory_routers import STANDALONE
from processes import HOST, Proc, free_port, process_cpu_seconds, wait_for_port
from vs_c_router import ADDRESSES, DEFAULT_C_ROUTER

ADDRESS = "closest/lat"
WARMUP = 2000
SLOW_TURN_NS = 500_000
# With --fifo: every process of a run (router, sender, receiver) under SCHED_FIFO (chrt), so
# that the machine's other work (a shared host's tests) cannot preempt them; they still
# share the CPUs with each other, as on an idle host.
PREFIX: List[str] = []


def start_router(kind: str, spec: Tuple[str, Dict[str, str]] | None, args: argparse.Namespace,
                 workdir: Path, trace: Path | None) -> Tuple[Proc, int]:
    port = free_port()
    config = workdir / f"{kind}-{port}.conf"
    config.write_text(STANDALONE.format(mode="standalone", router_id=f"{kind}1", host=HOST, port=port,
                                        extra=ADDRESSES))
    env = dict(os.environ)
    if spec is None:
        argv = [str(args.c_router), "-c", str(config)]
    else:
        router_dir, extra_env = spec
        env["PYTHONPATH"] = router_dir
        env.update(extra_env)
        if trace is not None:
            env["QDROUTER_LOOP_TRACE"] = str(trace)
        argv = [args.python, "-m", "qdrouter", "-c", str(config)]
    proc = Proc(kind, PREFIX + argv, env=env)
    wait_for_port(port, proc, 30)
    return proc, port


def clients(port: int, count: int, rate: int, lat_file: Path | None, timeout: float) -> None:
    recv = [str(RECV), "-c", f"{HOST}:{port}", "-a", ADDRESS, "-m", str(count), "-w", "1000",
            "-i", "3", "-t", str(timeout)]
    if lat_file is not None:
        recv += ["--latency-out", str(lat_file)]
    rp = Proc("receiver", PREFIX + recv)
    try:
        rp.wait_event("ready", 30)
        send = [str(SEND), "-c", f"{HOST}:{port}", "-a", ADDRESS, "-m", str(count), "-s", "100",
                "-t", str(timeout)]
        if rate:
            send += ["--rate", str(rate)]
        sp = Proc("sender", PREFIX + send)
        try:
            sp.result(timeout + 30)
        finally:
            sp.close()
        rp.result(timeout + 30)
    finally:
        rp.close()


def pct(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    rank = max(1, int(-(-q * len(sorted_values) // 1)))  # nearest rank, as qdm-recv
    return sorted_values[min(rank, len(sorted_values)) - 1]


def attribute(lat: Sequence[int], trace: Dict[str, Any], rate: int) -> Dict[str, Any]:
    """Match each measured message to the turn that read it (the n-th delivery the router read,
    after the warm-up's) and classify the slow ones."""
    turns = [t for t in trace["turns"]]
    turns.sort(key=lambda t: t[0])
    starts = [t[0] for t in turns]
    cumulative, total = [], 0
    for t in turns:
        total += t[3]
        cumulative.append(total)  # deliveries read up to and including this turn
    period = 1e9 / rate
    reads: List[int] = []
    for i in range(len(lat)):
        n = WARMUP + i + 1
        k = bisect_left(cumulative, n)
        reads.append(turns[k][0] if k < len(turns) else -1)
    # The sender's start (its first credit) is not in the router's clock's record: take the
    # earliest it can be, so the message read soonest after its due time counts as read at once.
    t0 = min(r - i * period for i, r in enumerate(reads) if r >= 0)
    gcs = sorted(trace["gc"], key=lambda g: g[0])
    gc_starts = [g[0] for g in gcs]
    ordered = sorted(lat)
    threshold = pct(ordered, 0.999)
    causes: Dict[str, int] = {}
    worst_gc: List[float] = []
    long_turns: set[Tuple[int, int, int]] = set()  # (wall µs, CPU µs, messages read)
    for i, latency in enumerate(lat):
        if latency < threshold or reads[i] < 0:
            continue
        due = t0 + i * period
        arrived = due + latency
        # Collections and turns that overlap [due, arrived].
        lo = max(0, bisect_left(gc_starts, due) - 1)
        hi = bisect_right(gc_starts, arrived)
        overlapping_gc = [g for g in gcs[lo:hi] if g[1] >= due and g[0] <= arrived]
        lo = max(0, bisect_left(starts, due) - 1)
        hi = bisect_right(starts, arrived)
        overlapping = [t for t in turns[lo:hi] if t[1] >= due and t[0] <= arrived]
        if overlapping_gc:
            cause = f"gc (gen {max(g[2] for g in overlapping_gc)})"
            worst_gc.append(max(g[1] - g[0] for g in overlapping_gc) / 1000)
        elif any(t[4] for t in overlapping):
            cause = "tick"
        elif any(t[1] - t[0] > SLOW_TURN_NS for t in overlapping):
            cause = "turn > 500 µs"
            worst = max(overlapping, key=lambda t: t[1] - t[0])
            long_turns.add(((worst[1] - worst[0]) // 1000, worst[2] // 1000, worst[3]))
        elif reads[i] - due > SLOW_TURN_NS:
            cause = "late read"
        else:
            cause = "late delivery"
        causes[cause] = causes.get(cause, 0) + 1
    walls = sorted((t[1] - t[0]) / 1000 for t in turns if t[3])
    cpus = sorted(t[2] / 1000 for t in turns if t[3])
    singles = sorted(t[2] / 1000 for t in turns if t[3] == 1)
    batch = sorted(t[3] for t in turns if t[3])
    ticks = sorted(t[4] / 1000 for t in turns if t[4])
    young = [g for g in gcs if g[2] == 0]
    by_gen: Dict[int, List[float]] = {}
    for g in gcs:
        by_gen.setdefault(g[2], []).append(g[3] / 1000)  # CPU µs: the machine's noise aside
    return {
        "causes": causes,
        "turn_wall_us": [pct(walls, q) for q in (0.5, 0.99, 0.999, 1.0)],
        "turn_cpu_us": [pct(cpus, q) for q in (0.5, 0.99, 0.999, 1.0)],
        "one_msg_turn_cpu_us_p50": round(pct(singles, 0.5), 1),
        "msgs_per_turn": [pct(batch, q) for q in (0.5, 0.99, 1.0)],
        "gc_count_max_mean_cpu_us": {gen: [len(v), round(max(v)), round(sum(v) / len(v))]
                                      for gen, v in sorted(by_gen.items())},
        "slow_gc_us": sorted(worst_gc)[-5:],
        "long_turns_wall_cpu_msgs": sorted(long_turns)[-5:],
        "forced_full_gc_cpu_us": round(trace.get("full_collection_ns", -1000) / 1000),
        "tick_cpu_us": [round(pct(ticks, q)) for q in (0.5, 1.0)],
        "collected_per_gc0": round(sum(g[4] for g in young) / max(1, len(young))),
        "young": dict(sorted((trace.get("young") or {}).items(), key=lambda kv: -kv[1])[:25]),
        "young_garbage": dict(sorted((trace.get("garbage") or {}).items(), key=lambda kv: -kv[1])[:12]),
    }


def one_run(kind: str, spec: Tuple[str, Dict[str, str]] | None, args: argparse.Namespace,
            workdir: Path, rep: int) -> Dict[str, Any]:
    trace = workdir / f"trace-{kind}-{rep}.json" if spec is not None and args.trace else None
    lat_file = workdir / f"lat-{kind}-{rep}.bin"
    proc, port = start_router(kind, spec, args, workdir, trace)
    try:
        clients(port, WARMUP, 0, None, 60)
        count = int(args.rate * args.duration)
        cpu_before = process_cpu_seconds(proc.popen.pid) or 0.0
        clients(port, count, args.rate, lat_file, args.duration + 60)
        cpu_us_per_msg = ((process_cpu_seconds(proc.popen.pid) or 0.0) - cpu_before) * 1e6 / count
    finally:
        proc.kill(grace=10)
        proc.close()
    lat = array("q")
    lat.frombytes(lat_file.read_bytes())
    ordered = sorted(lat)
    row: Dict[str, Any] = {"kind": kind, "rep": rep, "n": len(lat),
                           "p50": pct(ordered, 0.5) / 1000, "p99": pct(ordered, 0.99) / 1000,
                           "p999": pct(ordered, 0.999) / 1000, "max": ordered[-1] / 1000,
                           "cpu_us_per_msg": round(cpu_us_per_msg, 2)}
    # When in the run (ms after its first message was due) the messages at or above p99.9
    # were due, in clusters: one stall shows as one cluster.
    threshold = pct(ordered, 0.999)
    due_ms = sorted({int(i * 1000 / args.rate) // 10 * 10 for i, v in enumerate(lat) if v >= threshold})
    row["slow_due_ms"] = due_ms
    if trace is not None and trace.exists():
        row.update(attribute(lat, json.loads(trace.read_text()), args.rate))
    return row


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=int, default=10000)
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--q", action="append", default=[], metavar="NAME=ROUTER_DIR[,VAR=VALUE...]",
                   help="a qdmesh to measure (default: this checkout's, as Q)")
    p.add_argument("--no-c", action="store_true", help="leave the C router out")
    p.add_argument("--no-trace", dest="trace", action="store_false", help="run qdmesh without its trace")
    p.add_argument("--c-router", type=Path, default=Path(os.environ.get("QDROUTERD_C", DEFAULT_C_ROUTER)))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--fifo", type=int, default=0, metavar="PRIORITY",
                   help="run routers and clients under SCHED_FIFO at this priority (chrt -f)")
    p.add_argument("--json", dest="json_out")
    p.add_argument("--workdir", type=Path, help="keep the traces and latency files here")
    args = p.parse_args(argv)
    kinds: Dict[str, Tuple[str, Dict[str, str]] | None] = {}
    for text in args.q or [f"Q={Path(__file__).resolve().parent.parent / 'router'}"]:
        name, _, rest = text.partition("=")
        router_dir, *settings = rest.split(",")
        kinds[name] = (str(Path(router_dir).resolve()), dict(s.split("=", 1) for s in settings))
    if args.fifo:
        PREFIX[:] = ["chrt", "-f", str(args.fifo)]
    if not args.no_c:
        kinds["C"] = None
    ensure_built(False)
    proton_shim(args.python)
    rows = []
    with tempfile.TemporaryDirectory(prefix="qdm-lat-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for rep in range(args.repeat):
            for kind, spec in kinds.items():
                row = one_run(kind, spec, args, workdir, rep)
                rows.append(row)
                print(json.dumps(row), flush=True)
    for kind in kinds:
        mine = [r for r in rows if r["kind"] == kind]
        med = {k: sorted(r[k] for r in mine)[len(mine) // 2]
               for k in ("p50", "p99", "p999", "max", "cpu_us_per_msg")}
        print(f"{kind}: median of {len(mine)}: p50 {med['p50']:.0f} µs, p99 {med['p99']:.0f} µs, "
              f"p99.9 {med['p999']:.0f} µs, max {med['max']:.0f} µs, "
              f"router CPU {med['cpu_us_per_msg']:.1f} µs/msg", flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
