#!/usr/bin/env python3
"""One interior router with many edge routers on loopback, a process each, routing between
any two (200 edge routers and more): how long they take to attach, what they cost the
interior router, and unsettled messages between random pairs of edges, every one accepted.

    python bench/many_edges.py --edges 200 --pairs 20          # qdmesh (add --kind C: the C router)

Standard library only, like run.py; the routers need proton, the load generators proton-C.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

from measure import ensure_built, proton_shim
from memory_routers import STANDALONE, rss_kib
from processes import HOST, BenchError, Proc, wait_for_port
from vs_c_router import ADDRESSES, DEFAULT_C_ROUTER, EDGE_CONNECTOR, EDGE_LISTENER, _env, router_argv

RECV = Path(__file__).resolve().parent / "build" / "qdm-recv"
SEND = Path(__file__).resolve().parent / "build" / "qdm-send"


def ports_outside_ephemeral_range(count: int, start: int = 21000) -> List[int]:
    """Listening ports below the kernel's ephemeral range: with hundreds of routers connecting,
    a port picked from that range may be taken by an outgoing connection before its listener
    binds it."""
    found: List[int] = []
    port = start
    while len(found) < count:
        with socket.socket() as probe:
            try:
                probe.bind((HOST, port))
                found.append(port)
            except OSError:
                pass
        port += 1
    return found


def config(mode: str, router_id: str, port: int, extra: str) -> str:
    return STANDALONE.format(mode=mode, router_id=router_id, host=HOST, port=port, extra=ADDRESSES + extra)


def edge_count(interior_port: int) -> int:
    """How many edge connections the interior router has (its connection table, role edge)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "router"))
    from qdrouter.tools.management_client import ManagementClient

    with ManagementClient(f"amqp://{HOST}:{interior_port}", timeout=30) as client:
        return sum(1 for row in client.query("connection", ["role"]) if row.get("role") == "edge")


def pair_run(args: argparse.Namespace, send_port: int, recv_port: int, address: str) -> Dict[str, Any]:
    receiver = Proc("receiver", [str(RECV), "-c", f"{HOST}:{recv_port}", "-a", address, "-m",
                                 str(args.messages), "-t", "60"])
    try:
        receiver.wait_event("ready", 30)
        sender = Proc("sender", [str(SEND), "-c", f"{HOST}:{send_port}", "-a", address, "-m",
                                 str(args.messages), "-t", "60"])
        try:
            sent = sender.result(90)
        finally:
            sender.close()
        received = receiver.result(90)
    finally:
        receiver.close()
    return {"accepted": int(sent["accepted"]), "received": int(received["messages"]),
            "msgs_per_sec": float(sent["msgs_per_sec"]), "p50_us": received.get("p50_us")}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--edges", type=int, default=200)
    p.add_argument("--pairs", type=int, default=20, help="random pairs of edge routers to route between")
    p.add_argument("--messages", "-m", type=int, default=1000, help="unsettled messages per pair")
    p.add_argument("--kind", choices=("Q", "C"), default="Q", help="Q: qdmesh routers; C: the C router's")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--c-router", type=Path, default=Path(os.environ.get("QDROUTERD_C", DEFAULT_C_ROUTER)))
    p.add_argument("--router-start-timeout", type=float, default=120.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)
    ensure_built(False)
    if args.kind == "Q":
        proton_shim(args.python)
    procs: List[Proc] = []
    report: Dict[str, Any] = {"kind": args.kind, "edges": args.edges, "messages_per_pair": args.messages}
    with tempfile.TemporaryDirectory(prefix="qdm-edges-") as tmp:
        workdir = Path(tmp)
        try:
            port, edge_port, *edge_ports = ports_outside_ephemeral_range(args.edges + 2)
            path = workdir / "interior.conf"
            path.write_text(config("interior", "I1", port, EDGE_LISTENER.format(host=HOST, port=edge_port)))
            interior = Proc("interior", router_argv(args, args.kind, path), env=_env())
            procs.append(interior)
            wait_for_port(port, interior, args.router_start_timeout)
            rss_before = rss_kib(interior.popen.pid)
            started = time.monotonic()
            ports = []
            for n in range(args.edges):
                ports.append(edge_ports[n])
                path = workdir / f"edge{n}.conf"
                uplink = EDGE_CONNECTOR.format(host=HOST, port=edge_port)
                path.write_text(config("edge", f"E{n}", ports[-1], uplink))
                procs.append(Proc(f"edge {n}", router_argv(args, args.kind, path), env=_env()))
            for n, edge_listen in enumerate(ports):
                wait_for_port(edge_listen, procs[n + 1], args.router_start_timeout)
            deadline = time.monotonic() + args.router_start_timeout
            while (attached := edge_count(port)) < args.edges and time.monotonic() < deadline:
                time.sleep(1.0)
            report["attached"] = attached
            report["seconds_to_attach"] = round(time.monotonic() - started, 1)
            time.sleep(5.0)  # idle: what the interior router holds for its edges
            grown = rss_kib(interior.popen.pid) - rss_before
            report["interior_rss_kib_per_edge"] = round(grown / args.edges, 1)
            report["edge_rss_mib_each"] = round(
                sum(rss_kib(proc.popen.pid) for proc in procs[1:]) / 1024 / args.edges, 1)
            rnd = random.Random(args.seed)
            runs = []
            for k in range(args.pairs):
                a, b = rnd.sample(range(args.edges), 2)
                run = pair_run(args, ports[a], ports[b], f"closest/pair{k}")
                runs.append({"from": a, "to": b, **run})
                print(f"E{a} -> E{b}: {run['accepted']}/{args.messages} accepted, "
                      f"{run['msgs_per_sec']:,.0f} msgs/s", file=sys.stderr)
            report["pairs"] = runs
            report["all_accepted"] = all(r["accepted"] == r["received"] == args.messages for r in runs)
        except BenchError as error:
            print(f"many_edges: {error}", file=sys.stderr)
            return 1
        finally:
            for proc in procs:
                proc.kill(grace=5.0)
                proc.close()
    print(json.dumps({k: v for k, v in report.items() if k != "pairs"}, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2))
    return 0 if report.get("all_accepted") else 1


if __name__ == "__main__":
    sys.exit(main())
