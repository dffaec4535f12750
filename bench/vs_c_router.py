#!/usr/bin/env python3
"""qdmesh against the C router (qdrouterd 1.19), in one run, with the C load generators.

Three parts, each repeat measuring every kind back to back so ratios are same-run ratios:

* throughput: the four single-router scenarios of run.py (1->1 pre-settled and unsettled, 1->4
  balanced and multicast), direct, qdmesh and the C router from the same config file;
* lines: a line of three routers, sender on the first and receiver on the last, 1->1 unsettled,
  for QQQ (all qdmesh), CCC (all C) and the mixed QCQ and CQC;
* latency: 1->1 unsettled at a fixed rate (qdm-send --rate, open loop: each message carries the
  time it was due, so a message held back shows its wait), p50/p99/p99.9 for direct, qdmesh and
  the C router. Throughput-mode latencies of routers at different throughputs do not compare;
  these do.

    python bench/vs_c_router.py --repeat 3                 # prints markdown tables
    python bench/vs_c_router.py --parts latency --rates 10000,50000 --duration 10

Standard library only, like run.py; the routers need proton, the load generators proton-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

from measure import REPO_DIR, Router, ensure_built, proton_shim, run_clients
from memory_routers import INTER_ROUTER_CONNECTOR, INTER_ROUTER_LISTENER, STANDALONE
from processes import HOST, BenchError, Proc, free_port, wait_for_port
from report import fmt_rate, fmt_us, machine_info, median_or_none
from scenarios import SCENARIOS, Measurement, Scenario

DEFAULT_C_ROUTER = Path.home() / ".cache" / "qdr-1.19.0" / "bin" / "qdrouterd-c"
KIND_NAMES = {"Q": "qdmesh", "C": "C router"}
LINES = ("QQQ", "CCC", "QCQ", "CQC")
UNSETTLED = SCENARIOS["1to1-unsettled"]

# One config for both kinds (memory_routers.py's templates): workerThreads 1, the C router's best
# on two cores (qdmesh has one event loop whatever it says); every port on 127.0.0.1, as the C
# router binds what it is told; the addresses of run.py's scenarios.
ADDRESSES = "".join(f"address {{\n    prefix: {name}\n    distribution: {name}\n}}\n"
                    for name in ("closest", "balanced", "multicast"))


def router_config(mode: str, router_id: str, port: int, extra: str = "") -> str:
    return STANDALONE.format(mode=mode, router_id=router_id, host=HOST, port=port, extra=ADDRESSES + extra)


def router_argv(args: argparse.Namespace, kind: str, config: Path) -> List[str]:
    if kind == "C":
        return [str(args.c_router), "-c", str(config)]
    return [args.python, "-m", "qdrouter", "-c", str(config)]


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_DIR / "router"), env.get("PYTHONPATH")]))
    return env


class OneRouter(Router):
    """A standalone router of either kind from ROUTER (a Router, so run_clients measures its CPU)."""

    def __init__(self, args: argparse.Namespace, kind: str, workdir: Path) -> None:
        self.port = free_port()
        self.config = workdir / f"{kind}-{self.port}.conf"
        self.config.write_text(router_config("standalone", f"{kind}1", self.port))
        self.proc = Proc(KIND_NAMES[kind], router_argv(args, kind, self.config), env=_env())
        try:
            wait_for_port(self.port, self.proc, args.router_start_timeout)
        except BaseException:
            self.stop()
            raise


class Line:
    """Interior routers of the given kinds in a line; the sender uses the first, receivers the last."""

    def __init__(self, args: argparse.Namespace, kinds: str, workdir: Path) -> None:
        self.procs: List[Proc] = []
        ports = [free_port() for _ in kinds]
        inter = [free_port() for _ in kinds]
        # The receiver's address needs a few routing-protocol exchanges to reach router 1.
        self.settle = max(args.settle, 3.0)
        try:
            for i, kind in enumerate(kinds):
                extra = INTER_ROUTER_LISTENER.format(host=HOST, port=inter[i])
                if i:
                    extra += INTER_ROUTER_CONNECTOR.format(host=HOST, port=inter[i - 1])
                text = router_config("interior", f"{kind}{i + 1}", ports[i], extra)
                config = workdir / f"line-{kinds}-{i + 1}.conf"
                config.write_text(text)
                proc = Proc(f"{KIND_NAMES[kind]} {i + 1}", router_argv(args, kind, config), env=_env())
                self.procs.append(proc)
                wait_for_port(ports[i], proc, args.router_start_timeout)
        except BaseException:
            self.stop()
            raise
        self.port, self.receiver_port = ports[0], ports[-1]

    def check_alive(self) -> None:
        for proc in self.procs:
            if proc.returncode is not None:
                raise BenchError(f"{proc.name} stopped during the run:\n" + proc.stderr_tail())

    def stop(self) -> None:
        for proc in self.procs:
            proc.kill(grace=5.0)
            proc.close()


def measure(args: argparse.Namespace, sc: Scenario, workdir: Path, kind: str, label: str,
            count: int) -> Measurement:
    """One measured run through a router of ``kind`` ("direct", "Q", "C" or a line "QCQ")."""
    if kind == "direct":
        base = Scenario(f"{sc.name}-direct", "direct 1->1", 1, sc.address, sc.presettled)
        return run_clients(args, base, "direct", count, workdir, None)
    middle: Any = Line(args, kind, workdir) if len(kind) > 1 else OneRouter(args, kind, workdir)
    try:
        if args.warmup > 0:
            warm = argparse.Namespace(**{**vars(args), "rate": 0})
            run_clients(warm, sc, "warmup", args.warmup, workdir, middle)
        return run_clients(args, sc, label, count, workdir, middle)
    finally:
        middle.stop()


def _row(m: Measurement) -> Dict[str, Any]:
    return {"msgs_per_sec": m.msgs_per_sec, "p50_us": m.p50_us, "p99_us": m.p99_us, "p999_us": m.p999_us,
            "router_cpu_us_per_msg": m.router_cpu_us_per_msg, "lost": m.lost}


def _median_rows(rows: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    keys = rows[0].keys()
    return {k: median_or_none([r[k] for r in rows]) for k in keys}


def throughput(args: argparse.Namespace, workdir: Path) -> List[Dict[str, Any]]:
    results = []
    scenarios = [SCENARIOS[name] for name in args.scenarios]
    runs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {sc.name: {"direct": [], "Q": [], "C": []}
                                                         for sc in scenarios}
    for rep in range(args.repeat):
        for sc in scenarios:
            for kind in ("direct", "Q", "C"):
                m = measure(args, sc, workdir, kind, "router", args.messages)
                runs[sc.name][kind].append(_row(m))
                print(f"[{rep + 1}/{args.repeat}] {sc.name} {kind}: {m.msgs_per_sec:,.0f} msgs/s, "
                      f"p50 {fmt_us(m.p50_us)} µs, lost {m.lost}", file=sys.stderr)
    for sc in scenarios:
        by_kind = {kind: _median_rows(rows) for kind, rows in runs[sc.name].items()}
        pairs = zip(runs[sc.name]["Q"], runs[sc.name]["C"])
        ratios = [q["msgs_per_sec"] / c["msgs_per_sec"] for q, c in pairs if c["msgs_per_sec"]]
        results.append({"scenario": sc.name, "title": sc.title, **{k: v for k, v in by_kind.items()},
                        "qdmesh_over_c": median_or_none(ratios), "ratios": ratios})
    return results


def lines(args: argparse.Namespace, workdir: Path) -> List[Dict[str, Any]]:
    runs: Dict[str, List[Dict[str, Any]]] = {kinds: [] for kinds in args.lines}
    for rep in range(args.repeat):
        for kinds in args.lines:
            m = measure(args, UNSETTLED, workdir, kinds, "line3", args.messages)
            runs[kinds].append(_row(m))
            print(f"[{rep + 1}/{args.repeat}] line {kinds}: {m.msgs_per_sec:,.0f} msgs/s, "
                  f"p50 {fmt_us(m.p50_us)} µs, lost {m.lost}", file=sys.stderr)
    return [{"line": kinds, **_median_rows(rows)} for kinds, rows in runs.items()]


def latency(args: argparse.Namespace, workdir: Path) -> List[Dict[str, Any]]:
    results = []
    for rate in args.rates:
        paced = argparse.Namespace(**{**vars(args), "rate": rate})
        count = int(rate * args.duration)
        runs: Dict[str, List[Dict[str, Any]]] = {"direct": [], "Q": [], "C": []}
        for rep in range(args.repeat):
            for kind in runs:
                m = measure(paced, UNSETTLED, workdir, kind, "router", count)
                runs[kind].append(_row(m))
                print(f"[{rep + 1}/{args.repeat}] {rate}/s {kind}: {m.msgs_per_sec:,.0f} msgs/s, p50 "
                      f"{fmt_us(m.p50_us)} µs, p99 {fmt_us(m.p99_us)} µs, p99.9 {fmt_us(m.p999_us)} µs",
                      file=sys.stderr)
        results.append({"rate": rate, **{kind: _median_rows(rows) for kind, rows in runs.items()}})
    return results


def markdown(report: Dict[str, Any]) -> str:
    out = [f"{report['started']}; {report['machine']}; {report['repeat']} repeat(s), medians.", ""]
    if report.get("throughput"):
        out += ["| scenario | direct msgs/s | qdmesh msgs/s | C router msgs/s | qdmesh / C | "
                "p50 µs qdmesh / C | router CPU µs/msg qdmesh / C |", "|---|---:|---:|---:|---:|---:|---:|"]
        for r in report["throughput"]:
            q, c = r["Q"], r["C"]
            out.append(f"| {r['title']} | {fmt_rate(r['direct']['msgs_per_sec'])} | "
                       f"{fmt_rate(q['msgs_per_sec'])} | {fmt_rate(c['msgs_per_sec'])} | "
                       f"{r['qdmesh_over_c']:.2f} | "
                       f"{fmt_us(q['p50_us'])} / {fmt_us(c['p50_us'])} | "
                       f"{_us(q['router_cpu_us_per_msg'])} / {_us(c['router_cpu_us_per_msg'])} |")
        out.append("")
    if report.get("lines"):
        out += ["| line of 3 (1->1 unsettled) | msgs/s | p50 µs | p99 µs | lost |",
                "|---|---:|---:|---:|---:|"]
        for r in report["lines"]:
            out.append(f"| {r['line']} | {fmt_rate(r['msgs_per_sec'])} | {fmt_us(r['p50_us'])} | "
                       f"{fmt_us(r['p99_us'])} | {r['lost']:.0f} |")
        out.append("")
    if report.get("latency"):
        out += ["| fixed rate (1->1 unsettled) | kind | achieved msgs/s | p50 µs | p99 µs | p99.9 µs |",
                "|---|---|---:|---:|---:|---:|"]
        for r in report["latency"]:
            for kind in ("direct", "Q", "C"):
                m = r[kind]
                out.append(f"| {r['rate']:,}/s | {KIND_NAMES.get(kind, kind)} | "
                           f"{fmt_rate(m['msgs_per_sec'])} | {fmt_us(m['p50_us'])} | {fmt_us(m['p99_us'])} | "
                           f"{fmt_us(m['p999_us'])} |")
    return "\n".join(out)


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", default="throughput,lines,latency",
                   help="comma-separated: throughput,lines,latency")
    p.add_argument("--c-router", type=Path, default=Path(os.environ.get("QDROUTERD_C", DEFAULT_C_ROUTER)),
                   help="the C router's binary (default: .ci/setup.d/25-qdrouterd-c.sh's build)")
    p.add_argument("--python", default=sys.executable, help="interpreter that runs qdmesh (e.g. pypy3)")
    p.add_argument("--repeat", "-r", type=int, default=1)
    p.add_argument("--messages", "-m", type=int, default=100_000, help="messages per throughput run")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help="throughput scenarios")
    p.add_argument("--lines", default=",".join(LINES), help="line kinds, e.g. QQQ,CCC,QCQ,CQC")
    p.add_argument("--rates", default="10000,50000", help="fixed rates, msgs/s")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per fixed-rate run")
    p.add_argument("--size", "-s", type=int, default=100)
    p.add_argument("--credit", type=int, default=1000, help="receiver credit window")
    p.add_argument("--warmup", type=int, default=2000)
    p.add_argument("--idle", type=float, default=3.0)
    p.add_argument("--settle", type=float, default=0.2)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--router-start-timeout", type=float, default=30.0)
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)
    args.parts = [part for part in args.parts.split(",") if part]
    args.scenarios = [name for name in args.scenarios.split(",") if name]
    args.lines = [kinds.upper() for kinds in args.lines.split(",") if kinds]
    args.rates = [int(rate) for rate in args.rates.split(",") if rate]
    # run_clients and sender_argv read these from run.py's options.
    args.link_capacity, args.router_cmd, args.rate = None, None, 0
    if not args.c_router.exists():
        p.error(f"no C router at {args.c_router} (bash .ci/setup.d/25-qdrouterd-c.sh builds it)")
    ensure_built(False)
    proton_shim(args.python)
    report: Dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine_info(),
                              "repeat": args.repeat, "python": args.python, "c_router": str(args.c_router)}
    with tempfile.TemporaryDirectory(prefix="qdm-vs-c-") as tmp:
        workdir = Path(tmp)
        try:
            if "throughput" in args.parts:
                report["throughput"] = throughput(args, workdir)
            if "lines" in args.parts:
                report["lines"] = lines(args, workdir)
            if "latency" in args.parts:
                report["latency"] = latency(args, workdir)
        except BenchError as error:
            print(f"vs_c_router: {error}", file=sys.stderr)
            return 1
    print(markdown(report))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
