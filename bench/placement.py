#!/usr/bin/env python3
"""Where the kernel runs the router and its clients during a 1->1 run, and how busy each core is.

With three processes (sender, router, receiver) on a machine with fewer than three cores,
the kernel decides which of them share a core, and the busiest core sets the pace. This
runs one router measurement as bench/run.py does, records the scheduler with
`perf sched record` for a few one-second samples during it, and reports, per 100 ms window,
which processes ran where and how busy each core was. Needs `perf` (Debian: linux-perf)
and the right to trace the scheduler (root, or kernel.perf_event_paranoid <= 1).

Usage:  python bench/placement.py [--samples 3] [run.py options, e.g. --python pypy3
        --warmup 1000000 --messages 6000000 --scenarios 1to1-presettled]
See bench/README.md ("Where the cores go").
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, NamedTuple, Sequence, Tuple

import run
from measure import Router, ensure_built, proton_shim, run_clients
from processes import BenchError
from scenarios import Measurement

WINDOW_S = 0.1
CLIENT_NAMES = {"qdm-send": "sender", "qdm-recv": "receiver"}


class Slice(NamedTuple):
    """One stretch a task ran on a CPU, as `perf sched timehist` prints it (at its end)."""

    end_s: float
    cpu: int
    task: str
    run_ms: float


def parse_timehist(text: str, router_pid: int) -> List[Slice]:
    """The router's and the load generators' run slices from `perf sched timehist` output."""
    slices = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or not fields[1].startswith("["):
            continue
        name, _, pid = fields[2].partition("[")
        try:
            task_pid = int(pid.rstrip("]").split("/")[-1])
            end_s, cpu, run_ms = float(fields[0]), int(fields[1].strip("[]")), float(fields[-1])
        except ValueError:
            continue  # a header, or a line with an annotation instead of times
        task = "router" if task_pid == router_pid else CLIENT_NAMES.get(name)
        if task is not None:
            slices.append(Slice(end_s, cpu, task, run_ms))
    return slices


class Window(NamedTuple):
    placement: str  # e.g. "router alone (receiver+sender)": who shared a core with whom
    router_core_busy: float  # % of the window the router's core ran any of the three
    other_core_busy: float


def windows(slices: Sequence[Slice]) -> List[Window]:
    """Each full 100 ms window: where each process ran most, and how busy the cores were.

    A window where a process ran less than 70% of its time on one core is "migrating"."""
    if not slices:
        return []
    start = min(s.end_s - s.run_ms / 1000 for s in slices)
    per_window: Dict[int, Dict[Tuple[int, str], float]] = defaultdict(lambda: defaultdict(float))
    for s in slices:
        # A slice may span a window's edge: each window gets the part that fell in it.
        begin, end = s.end_s - s.run_ms / 1000 - start, s.end_s - start
        index = int(begin / WINDOW_S)
        while index * WINDOW_S < end:
            part = min(end, (index + 1) * WINDOW_S) - max(begin, index * WINDOW_S)
            per_window[index][(s.cpu, s.task)] += 1000 * part
            index += 1
    last = max(per_window)
    result = []
    for index in sorted(per_window):
        ran = per_window[index]
        tasks = {t for _, t in ran}
        if index in (0, last) or tasks != {"router", "sender", "receiver"}:
            continue  # partial windows at either end of a sample, or before or after the run
        home: Dict[str, int] = {}
        migrating = False
        for task in tasks:
            by_cpu = {cpu: ms for (cpu, t), ms in ran.items() if t == task}
            cpu = max(by_cpu, key=lambda c: by_cpu[c])
            home[task] = cpu
            migrating |= by_cpu[cpu] < 0.7 * sum(by_cpu.values())
        router_cpu = home["router"]
        busy: Dict[int, float] = defaultdict(float)
        for (cpu, _), ms in ran.items():
            busy[cpu] += ms
        others = [c for c in busy if c != router_cpu]
        other_busy = max((busy[c] for c in others), default=0.0)
        if migrating:
            placement = "migrating"
        else:
            groups: Dict[int, List[str]] = defaultdict(list)
            for task, cpu in home.items():
                groups[cpu].append(task)
            mine = sorted(groups.pop(router_cpu), key=lambda t: (t != "router", t))
            placement = "+".join(mine) if len(mine) > 1 else "router alone"
            rest = sorted("+".join(sorted(g)) for g in groups.values())
            if rest:
                placement += f" ({', '.join(rest)})"
        window_ms = WINDOW_S * 1000
        result.append(Window(placement, 100 * busy[router_cpu] / window_ms, 100 * other_busy / window_ms))
    return result


def summary_table(all_windows: Sequence[Window]) -> str:
    lines = [
        "| placement (processes sharing a core) | windows | router's core busy | other core busy |",
        "|---|---:|---:|---:|",
    ]
    counts = Counter(w.placement for w in all_windows)
    for placement, count in counts.most_common():
        mine = [w for w in all_windows if w.placement == placement]
        lines.append(
            f"| {placement} | {count} | {statistics.median(w.router_core_busy for w in mine):.0f}% "
            f"| {statistics.median(w.other_core_busy for w in mine):.0f}% |"
        )
    return "\n".join(lines)


def perf(sched_args: List[str]) -> str:
    """`perf sched ...`'s output; a BenchError that says what perf said when it fails."""
    done = subprocess.run(["perf", "sched", *sched_args], capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise BenchError(
            f"perf sched {sched_args[0]} failed (exit code {done.returncode}): {said}\n"
            "tracing the scheduler needs root or kernel.perf_event_paranoid <= 1"
        )
    return done.stdout


def record(samples: int, seconds: float, workdir: Path, router_pid: int) -> List[Window]:
    found: List[Window] = []
    for k in range(samples):
        data = workdir / f"sched-{k}.data"
        perf(["record", "-o", str(data), "--", "sleep", str(seconds)])
        text = perf(["timehist", "-i", str(data)])
        found += windows(parse_timehist(text, router_pid))
        time.sleep(0.5)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=True)
    p.add_argument("--samples", type=int, default=3, help="one-second perf sched samples during the run")
    own, rest = p.parse_known_args(argv)
    if own.samples < 1:
        p.error("--samples must be >= 1")
    args = run.parse_args(["--scenarios", "1to1-presettled", "--messages", "6000000", *rest])
    if shutil.which("perf") is None:
        print("error: needs perf (Debian: apt-get install linux-perf)", file=sys.stderr)
        return 2
    scenario = args.scenario_list[0]
    try:
        ensure_built(args.rebuild)
        proton_shim(args.python)
        with tempfile.TemporaryDirectory(prefix="qdmesh-placement-") as tmp:
            workdir = Path(tmp)
            router = Router(args, workdir)
            try:
                if args.warmup > 0:
                    run_clients(args, scenario, "warmup", args.warmup, workdir, router)
                measured: List[Measurement] = []
                failed: List[BaseException] = []

                def measure() -> None:
                    try:
                        measured.append(run_clients(args, scenario, "router", args.messages, workdir, router))
                    except BaseException as e:  # reported below, from the main thread
                        failed.append(e)

                clients = threading.Thread(target=measure)
                clients.start()
                time.sleep(1.5)  # past the start of the run
                found = record(own.samples, 1.0, workdir, router.proc.popen.pid)
                clients.join()
            finally:
                router.stop()
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if failed:
        print(f"error: {failed[0]}", file=sys.stderr)
        return 1
    m = measured[0]
    print(
        f"{scenario.title}: {m.msgs_per_sec:,.0f} msgs/s; router CPU {m.router_cpu_pct or 0:.0f}% of a core "
        f"({m.router_cpu_us_per_msg or 0:.2f} µs/msg); {len(found)} windows of 100 ms"
    )
    print(summary_table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
