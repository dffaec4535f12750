#!/usr/bin/env python3
"""Router memory under hostile clients: qdmesh and the C router (qdrouterd) side by side,
in one run. For each scenario and router kind: a fresh router, its resident memory before
(VmRSS), at its peak during the scenario (VmHWM), and settled a few seconds after the
clients have gone; plus what the producer managed to send and how many of its unsettled
messages were still in flight when the flood ended.

Scenarios (each floods for --seconds with --size messages, on one address):

* unread-unsettled: a consumer grants credit 2^31-1 and never reads its socket; an
  unsettled producer sends whenever it has credit.
* unread-presettled: the same consumer, a pre-settled producer.
* never-settles: a consumer grants credit 2^31-1, reads everything, settles nothing.
* multicast-unread: a multicast address with one consumer that never reads and one that
  keeps up; a pre-settled producer. Also reported: what the good consumer received.
* large: one message of --large-mb MiB from a producer to a consumer that keeps up, both
  clients sending and taking it a piece at a time (the router streams it: docs/routing.md,
  "Limits").

Usage:  python bench/hostile.py [--scenarios a,b] [--routers qdmesh,c] [--seconds 8]
The clients are tests/hostile/rawclient.py (python-qpid-proton's engine over plain sockets).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

from measure import REPO_DIR, proton_shim
from memory_routers import C_ROUTER, QDMESH, MeasuredRouter
from processes import HOST
from report import machine_info

sys.path.insert(0, str(REPO_DIR))
from tests.hostile.rawclient import UNLIMITED_CREDIT, Flood, LargeReceive, LargeSend, RawClient

SCENARIOS = ("unread-unsettled", "unread-presettled", "never-settles", "multicast-unread", "large")
DEFAULT_C_ROUTER = str(Path.home() / ".cache" / "qdr-1.19.0" / "bin" / "qdrouterd-c")
SETTLE_S = 5.0
MULTICAST_ADDRESS = """
address {
    prefix: multicast
    distribution: multicast
}
"""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Router memory under hostile clients: qdmesh and the C router.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated subset of {SCENARIOS}")
    p.add_argument("--routers", default="qdmesh,c", help="qdmesh, c, or both")
    p.add_argument("--seconds", type=float, default=8.0, help="how long each flood lasts")
    p.add_argument("--size", type=int, default=64 * 1024, help="message body size, bytes")
    p.add_argument("--large-mb", type=int, default=64, help="the large scenario's message size, MiB")
    p.add_argument("--python", default=sys.executable, help="interpreter that runs qdmesh")
    p.add_argument("--router-cmd", default=None, help="qdmesh command instead of 'PYTHON -m qdrouter'")
    p.add_argument("--c-router", default=DEFAULT_C_ROUTER, help="the C router's binary (qdrouterd-c)")
    p.add_argument("--router-start-timeout", type=float, default=30.0)
    p.add_argument("--json", dest="json_out", default=None, help="write the results as JSON here")
    return p.parse_args(argv)


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def url(router: MeasuredRouter) -> str:
    return f"amqp://{HOST}:{router.port}"


def unread(router: MeasuredRouter, args: argparse.Namespace, presettled: bool) -> Dict[str, Any]:
    stuck = RawClient(url(router), receive_buffer=64 * 1024)
    stuck.receiver("hostile", UNLIMITED_CREDIT)
    producer = Flood(RawClient(url(router)), "hostile", args.size, presettled)
    producer.run(args.seconds)
    result = {"sent": producer.sent, "in_flight": None if presettled else producer.in_flight}
    stuck.close()
    producer.client.close()
    return result


def never_settles(router: MeasuredRouter, args: argparse.Namespace) -> Dict[str, Any]:
    reader = RawClient(url(router))
    reader.receiver("hostile", UNLIMITED_CREDIT)
    producer = Flood(RawClient(url(router)), "hostile", args.size)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        producer.run(0.05)
        reader.pump(0.0)
    result = {"sent": producer.sent, "in_flight": producer.in_flight}
    reader.close()
    producer.client.close()
    return result


def multicast_unread(router: MeasuredRouter, args: argparse.Namespace) -> Dict[str, Any]:
    address = "multicast/hostile"
    stuck = RawClient(url(router), receive_buffer=64 * 1024)
    stuck.receiver(address, UNLIMITED_CREDIT)
    good = RawClient(url(router))
    good_link = good.receiver(address, UNLIMITED_CREDIT)
    producer = Flood(RawClient(url(router)), address, args.size, presettled=True)
    received = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        producer.run(0.05)
        good.pump(0.0)
        while good_link.current is not None:
            delivery = good_link.current
            good_link.recv(delivery.pending)
            good_link.advance()
            delivery.settle()
            received += 1
    result = {"sent": producer.sent, "good_received": received}
    for client in (stuck, good, producer.client):
        client.close()
    return result


def large(router: MeasuredRouter, args: argparse.Namespace) -> Dict[str, Any]:
    """One message of --large-mb MiB, producer to a consumer that keeps up; both clients send
    and take it a piece at a time (rawclient.LargeSend / LargeReceive), so only the router
    could hold it whole."""
    consumer = LargeReceive(RawClient(url(router)), "hostile")
    producer = LargeSend(RawClient(url(router)), "hostile", args.large_mb * 1024 * 1024)
    started = time.monotonic()
    while not (consumer.lengths and producer.outcome is not None) and time.monotonic() - started < 600:
        producer.run(0.01)
        consumer.pump(0.0)
    result = {"sent": int(producer.done),
              "delivered": consumer.lengths == [producer.size] and consumer.intact == [True],
              "outcome": producer.outcome, "seconds": round(time.monotonic() - started, 2)}
    consumer.client.close()
    producer.client.close()
    return result


RUNNERS: Dict[str, Callable[[MeasuredRouter, argparse.Namespace], Dict[str, Any]]] = {
    "unread-unsettled": lambda r, a: unread(r, a, presettled=False),
    "unread-presettled": lambda r, a: unread(r, a, presettled=True),
    "never-settles": never_settles,
    "multicast-unread": multicast_unread,
    "large": large,
}


def measure(args: argparse.Namespace, kind: str, scenario: str, workdir: Path) -> Dict[str, Any]:
    router = MeasuredRouter(args, kind, workdir, "H", extra_config=MULTICAST_ADDRESS)
    try:
        time.sleep(1.0)
        before = status_kib(router.pid, "VmRSS")
        result = RUNNERS[scenario](router, args)
        peak = status_kib(router.pid, "VmHWM")
        time.sleep(SETTLE_S)
        router.check_alive()
        settled = status_kib(router.pid, "VmRSS")
    finally:
        router.stop()
    return {"router": kind, "scenario": scenario, "before_mb": round(before / 1024, 1),
            "peak_mb": round(peak / 1024, 1), "settled_mb": round(settled / 1024, 1), **result}


_COLUMNS = ("router", "scenario", "before_mb", "peak_mb", "settled_mb", "sent", "in_flight")


def table(rows: List[Dict[str, Any]]) -> str:
    lines = ["| scenario | router | before MB | peak MB | settled MB | sent | in flight at end | other |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        other = ", ".join(f"{k} {v}" for k, v in row.items() if k not in _COLUMNS)
        in_flight = "-" if row.get("in_flight") is None else row["in_flight"]
        lines.append(f"| {row['scenario']} | {row['router']} | {row['before_mb']} | {row['peak_mb']} | "
                     f"{row['settled_mb']} | {row['sent']} | {in_flight} | {other} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = [QDMESH if k == "qdmesh" else C_ROUTER for k in args.routers.split(",") if k]
    scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = [s for s in scenarios if s not in RUNNERS]
    if unknown:
        print(f"unknown scenarios: {unknown}", file=sys.stderr)
        return 2
    if QDMESH in kinds:
        proton_shim(args.python)
    rows = []
    with tempfile.TemporaryDirectory(prefix="qdm-hostile-") as tmp:
        for scenario in scenarios:
            for kind in kinds:  # interleaved: each scenario on both kinds back to back
                row = measure(args, kind, scenario, Path(tmp))
                print(json.dumps(row), file=sys.stderr)
                rows.append(row)
    print(f"bench/hostile.py, {datetime.date.today()}, {args.seconds:g} s floods of {args.size} B messages")
    print(machine_info())
    print(table(rows))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
