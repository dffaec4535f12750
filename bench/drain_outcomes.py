#!/usr/bin/env python3
"""What producers hear when a router is stopped with SIGTERM under traffic (as Kubernetes
stops a pod): qdmesh with its graceful drain (--drain-timeout) beside qdrouterd 1.19 (which
has none: it exits), each router kind in a mesh of its own kind.

    python bench/drain_outcomes.py [--runs 3] [--kinds qdmesh,c] [--scenarios local,transit]
                                   [--drain-timeout 20] [--json FILE]

Scenarios (router B is the one stopped; interior routers, loopback, unsettled messages sent
without pause, at most 50 in flight; the consumer accepts each as it arrives):

* local: the producer is attached to B, the consumer to A (pair B-A).
* transit: the producer on A, the consumer on C, B on the cheaper path between them
  (square A-B-C cost 2, A-D-C cost 4).

For each run: the producer's deliveries by outcome (accepted, released, modified, rejected,
unknown: no outcome before its connection dropped), what the consumer received, duplicates,
B's exit code and seconds from SIGTERM to exit. Deliveries are sent only with credit, so each
one reached the wire. The C router runs from $QDROUTERD_C or ~/.cache/qdr-1.19.0/bin.
"""

from __future__ import annotations

import argparse
import datetime
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "router")]

from tests.interop.cpeer import CRouter, c_router_binary, section  # noqa: E402
from tests.mesh.drain_traffic import settle_all, stream, tally  # noqa: E402
from tests.mesh.meshproc import build_mesh, start_order  # noqa: E402
from tests.ports import free_port  # noqa: E402
from tests.router.amqpclient import Net  # noqa: E402

Edge = Tuple[str, str, int]
SCENARIOS: Dict[str, Tuple[List[Edge], str, str]] = {
    # edges (connecting router, listening router, cost), producer's router, consumer's router
    "local": ([("B", "A", 1)], "B", "A"),
    "transit": ([("B", "A", 1), ("C", "B", 1), ("D", "A", 2), ("C", "D", 2)], "A", "C"),
}
WARM_UP = 300  # messages received before B is stopped
AFTER = 300  # more received after B is gone (transit: the traffic goes on around it)


class Routers:
    """A started mesh of one kind: url and process of each router, and how to stop them."""

    def __init__(self, urls: Dict[str, str], signal_b: Callable[[], None], b_exit: Callable[[], int | None],
                 stop_all: Callable[[], None]) -> None:
        self.urls = urls
        self.signal_b = signal_b
        self.b_exit = b_exit
        self.stop_all = stop_all


def qdmesh_routers(workdir: Path, edges: List[Edge], drain_timeout: float) -> Routers:
    mesh = build_mesh(workdir, edges)
    mesh["B"].args.extend(["--drain-timeout", f"{drain_timeout:g}"])
    for name in start_order(list(mesh.routers), edges):
        mesh[name].start()
    mesh.wait_converged(timeout=mesh.timers.convergence_bound + 10)
    mesh.close()  # its management clients: an idle client would hold B's hand-back up

    def stop_all() -> None:
        for router in mesh.routers.values():
            if router.is_running():
                router.send_signal(signal.SIGKILL)
        mesh.close()

    return Routers({name: router.url for name, router in mesh.routers.items()},
                   lambda: mesh["B"].send_signal(signal.SIGTERM), lambda: mesh["B"].proc.poll(),  # type: ignore[union-attr]
                   stop_all)


def c_routers(workdir: Path, edges: List[Edge], binary: Path) -> Routers:
    names = sorted({name for edge in edges for name in edge[:2]})
    sections: Dict[str, str] = {name: "" for name in names}
    for connecting, listening, cost in edges:
        port = free_port()
        sections[listening] += section("listener", {"host": "127.0.0.1", "port": port, "role": "inter-router",
                                                     "cost": cost, "saslMechanisms": "ANONYMOUS",
                                                     "authenticatePeer": "no"})
        sections[connecting] += section("connector", {"host": "127.0.0.1", "port": port,
                                                      "role": "inter-router", "cost": cost})
    routers: Dict[str, CRouter] = {}
    for name in start_order(names, edges):
        (workdir / name).mkdir(parents=True)
        routers[name] = CRouter(binary, workdir / name, name, sections=sections[name]).start()
    time.sleep(8)  # qdrouterd's paths: hellos, LSUs and its once-a-second computation

    def stop_all() -> None:
        for router in routers.values():
            router.hard_kill()

    b = routers["B"]
    return Routers({name: router.url for name, router in routers.items()},
                   lambda: b.proc.send_signal(signal.SIGTERM), lambda: b.proc.poll(),  # type: ignore[union-attr]
                   stop_all)


def one_run(routers: Routers, producer_on: str, consumer_on: str, address: str) -> Dict[str, Any]:
    net = Net()
    exited: List[float] = []

    def b_gone() -> bool:
        """Whether B has exited (noting when it was first seen gone)."""
        if not exited and routers.b_exit() is not None:
            exited.append(time.monotonic())
        return bool(exited)

    try:
        rcv = net.connect(routers.urls[consumer_on]).receiver(address, credit=250)
        snd = net.connect(routers.urls[producer_on]).sender(address)
        stream(net, snd, lambda: len(rcv.received) >= WARM_UP, 60)
        signalled = time.monotonic()
        routers.signal_b()
        if producer_on == "B":
            stream(net, snd, lambda: b_gone() or not snd.client.alive, 60)
        else:
            stream(net, snd, b_gone, 60)
            before = len(rcv.received)
            stream(net, snd, lambda: b_gone() and len(rcv.received) >= before + AFTER, 30)
        settle_all(net, snd, 10)
        while not b_gone() and time.monotonic() - signalled < 60:
            net.pump(0.02)
        row: Dict[str, Any] = tally(snd, [rcv]).row()
        row["b_exit"] = routers.b_exit()
        row["b_seconds"] = round(exited[0] - signalled, 1) if exited else None
        return row
    finally:
        net.close()


def table(results: List[Dict[str, Any]]) -> str:
    columns = ("kind", "scenario", "run", "sent", "accepted", "released", "modified", "rejected", "unknown",
               "received", "duplicates", "b_exit")
    lines = ["| " + " | ".join(columns) + " | B stopped after (s) |", "|" + "---|" * (len(columns) + 1)]
    for row in results:
        lines.append("| " + " | ".join(str(row[c]) for c in columns) + f" | {row['b_seconds']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--kinds", default="qdmesh,c", help="qdmesh, c, or both")
    p.add_argument("--scenarios", default="local,transit")
    p.add_argument("--drain-timeout", type=float, default=20.0, help="qdmesh's, for router B")
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)
    results: List[Dict[str, Any]] = []
    binary = c_router_binary()
    for kind in args.kinds.split(","):
        if kind == "c" and binary is None:
            print("qdrouterd-c not found: the C router is skipped", file=sys.stderr)
            continue
        for scenario in args.scenarios.split(","):
            edges, producer_on, consumer_on = SCENARIOS[scenario]
            for run in range(1, args.runs + 1):
                with tempfile.TemporaryDirectory(prefix="drain-bench-") as tmp:
                    if kind == "c":
                        assert binary is not None
                        routers = c_routers(Path(tmp), edges, binary)
                    else:
                        routers = qdmesh_routers(Path(tmp), edges, args.drain_timeout)
                    try:
                        row = one_run(routers, producer_on, consumer_on, f"closest/drain-{scenario}-{run}")
                    finally:
                        routers.stop_all()
                row.update({"kind": kind, "scenario": scenario, "run": run})
                results.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{stamp}: python bench/drain_outcomes.py {' '.join(argv if argv is not None else sys.argv[1:])}\n")
    print(table(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
