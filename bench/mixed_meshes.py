#!/usr/bin/env python3
"""Generated mixed meshes against the all-C mesh of the same shape, ids and costs, many seeds.

    python bench/mixed_meshes.py --count 30 --seed 1000 [--kill] [--max-interiors 8] [--out FILE]

Seeds SEED .. SEED+COUNT-1: each seed's mesh (tests/interop/meshgen.py: 3 to 8 interior routers
of both kinds, qdmesh and qdrouterd 1.19, in a line, ring, full mesh, star or random graph,
random ids, costs and hello settings, edge routers of both kinds) runs its traffic script
(tests/interop/meshgen_traffic.py) beside its all-C twin; a markdown table (seed, shape, kinds,
each check's counts mixed/all-C, verdict) goes to stdout and to --out. ``--kill`` kills an
interior router under traffic in every other seed (the even ones). A seed whose mixed mesh did
worse than the all-C one is listed with the command that runs it alone. Every router started
is stopped (try/finally), whatever happens; SIGINT or SIGTERM ends the run after the seed under
way (the clients' waits would swallow an interrupt). Exits 1 if any seed did worse.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "router")]

from tests.interop.meshgen_traffic import AT_LEAST, AT_MOST, Counts, SeedRun, run_seed  # noqa: E402

COLUMNS = ("closest", "balanced", "multicast", "request", "management", "kill")
# Each compared count and its short name in the table.
SHOWN = {"accepted": "acc", "released": "rel", "modified": "mod", "rejected": "rej", "none": "no-outcome",
         "lost": "lost", "duplicates": "dup", "replies": "replies", "answered": "mgmt",
         "answered_qdmanage": "qdmanage", "tail_accepted": "acc-after-restart", "ready": "ready"}


def cell(mixed: Counts | None, all_c: Counts | None) -> str:
    """One check's counts as ``key mixed/all-C``: what a reader compares (zeros left out)."""
    if mixed is None and all_c is None:
        return ""
    mixed, all_c = mixed or {}, all_c or {}
    parts = []
    for key, short in SHOWN.items():
        m, c = mixed.get(key), all_c.get(key)
        if key == "ready" and m == c == 1:
            continue
        if (m or c) and (key in AT_LEAST or key in AT_MOST):
            parts.append(f"{short} {m}/{c}")
    copies = sorted(k for k in all_c if k.startswith("copies@"))
    if copies:
        def most(counts: Counts) -> str:
            return ",".join(str(max(counts.get(k) or [0])) for k in copies)  # type: ignore[type-var]
        parts.append(f"copies {most(mixed)}/{most(all_c)}")
    if "table" in all_c:
        parts.append("table " + ("same" if mixed.get("table") == all_c["table"] else "DIFFERS"))
    if "during" in all_c:
        parts.append(f"({mixed.get('during')} / {all_c.get('during')})")
    return ", ".join(parts)


def row(run: SeedRun) -> str:
    def find(kind: str, prefix: str) -> Counts | None:
        return next((v for k, v in run.results.get(kind, {}).items() if k.startswith(prefix)), None)
    cells = [cell(find("mixed", c), find("all-c", c)) for c in COLUMNS]
    verdict = "ok" if run.ok else "WORSE"
    return (f"| {run.spec.seed} | {run.spec.shape} | {run.spec.kinds()} | " + " | ".join(cells)
            + f" | {verdict} | {run.seconds:.0f} |")


HEADER = ("| seed | shape | kinds | " + " | ".join(COLUMNS) + " | verdict | s |\n"
          "|" + "---|" * (len(COLUMNS) + 5))


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--count", type=int, default=1, help="how many seeds")
    parser.add_argument("--kill", action="store_true", help="kill a router under traffic in even seeds")
    parser.add_argument("--min-interiors", type=int, default=3)
    parser.add_argument("--max-interiors", type=int, default=8)
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    lines = [HEADER]
    print(HEADER, flush=True)
    failures: Dict[int, str] = {}
    stopping: List[int] = []

    def stop_after_this_seed(signum: int, frame: object) -> None:
        stopping.append(signum)
        print("# stopping after the seed under way", file=sys.stderr, flush=True)
    signal.signal(signal.SIGINT, stop_after_this_seed)
    signal.signal(signal.SIGTERM, stop_after_this_seed)
    done = 0
    for seed in range(args.seed, args.seed + args.count):
        if stopping:
            break
        done += 1
        workdir = Path(tempfile.mkdtemp(prefix=f"mixed-mesh-{seed}-"))
        kill = args.kill and seed % 2 == 0
        command = (f"python bench/mixed_meshes.py --seed {seed} --min-interiors {args.min_interiors} "
                   f"--max-interiors {args.max_interiors}" + (" --kill" if kill else ""))
        try:
            run = run_seed(workdir, seed, kill=kill, min_interiors=args.min_interiors,
                           max_interiors=args.max_interiors)
        except Exception as error:  # a router that would not start: the seed's row says so
            failures[seed] = f"{command}  # {type(error).__name__}: {str(error)[:300]} (logs in {workdir})"
            lines.append(f"| {seed} | | | " + " | " * len(COLUMNS) + "ERROR | |")
            print(lines[-1], flush=True)
            continue
        lines.append(row(run))
        print(lines[-1], flush=True)
        if run.ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            failures[seed] = (f"{command}  # {run.spec.describe()}; " + "; ".join(run.worse + run.stop_errors)
                              + f" (logs in {workdir})")
    summary = (f"\n{done - len(failures)} of {done} seeds no worse than the all-C mesh "
               f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n")
    summary += "".join(f"- seed {seed}: {text}\n" for seed, text in failures.items())
    print(summary)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n" + summary)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
