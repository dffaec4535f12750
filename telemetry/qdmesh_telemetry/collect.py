"""``qdmesh-collect``: snapshot every router of a mesh through AMQP management, at an interval.

    qdmesh-collect --mesh demo --router 127.0.0.1:5672 --router 127.0.0.1:5673 --out snapshots/
    qdmesh-collect --mesh demo --discover 127.0.0.1:5672 --out snapshots/
    qdmesh-collect --mesh M --routermesh M --namespace NS --size 3 --out /data/telemetry
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from typing import Any, List

from .collector import Collector, CollectorOptions, routermesh_addresses


def parse_args(argv: List[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="qdmesh-collect",
        description="Snapshot every router of a mesh (router, connection, router.link, router.address, "
                    "router.node, autoLink, linkRoute, vhostStats) through AMQP management into JSON Lines "
                    "files partitioned by mesh/date/hour.")
    parser.add_argument("--mesh", required=True, help="mesh name written in every row and the partition path")
    parser.add_argument("--out", required=True, type=Path, help="directory to write snapshots under")
    where = parser.add_argument_group("which routers (at least one of)")
    where.add_argument("--router", action="append", default=[], metavar="HOST:PORT",
                       help="a router's management address (repeat for each router)")
    where.add_argument("--discover", action="append", default=[], metavar="HOST:PORT",
                       help="a seed router: also poll every router its router.node lists, through it")
    where.add_argument("--routermesh", metavar="NAME",
                       help="a RouterMesh's routers by their in-cluster DNS names "
                            "(needs --namespace, --size)")
    parser.add_argument("--namespace", default="default", help="namespace of --routermesh")
    parser.add_argument("--size", type=int, help="number of routers of --routermesh")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between snapshots (default 10)")
    parser.add_argument("--flush-interval", type=float, default=60.0,
                        help="seconds between files written (default 60)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for a router (default 5)")
    parser.add_argument("--duration", type=float,
                        help="stop after this many seconds (default: run until signalled)")
    parser.add_argument("--rounds", type=int, help="stop after this many snapshots of each router")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every failed snapshot")
    args = parser.parse_args(argv)
    for name in ("interval", "flush_interval", "timeout", "duration"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name.replace('_', '-')}: must be a positive number of seconds, got {value:g}")
    if args.rounds is not None and args.rounds < 1:
        parser.error(f"--rounds: must be at least 1, got {args.rounds}")
    if args.routermesh and (args.size is None or args.size < 1):
        parser.error("--size: the number of routers of --routermesh is required (at least 1)")
    if not (args.router or args.discover or args.routermesh):
        parser.error("no routers: give --router, --discover or --routermesh")
    return args


def main(argv: List[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s")
    # proton logs every (re)connection at INFO; the collector reports failures itself.
    logging.getLogger("proton").setLevel(logging.WARNING)
    addresses = list(args.router) + list(args.discover)
    if args.routermesh:
        addresses += routermesh_addresses(args.routermesh, args.namespace, args.size)
    options = CollectorOptions(mesh=args.mesh, output=args.out, interval=args.interval,
                               flush_interval=args.flush_interval, timeout=args.timeout,
                               discover=bool(args.discover))
    try:
        collector = Collector(addresses, options)
    except ValueError as e:
        print(f"qdmesh-collect: {e}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: Any) -> None:
        collector.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        collector.run(rounds=args.rounds, duration=args.duration)
    except OSError as e:
        print(f"qdmesh-collect: cannot write under {args.out}: {e}", file=sys.stderr)
        return 1
    rows = sum(p.snapshots for p in collector.pollers.values())
    print(f"qdmesh-collect: {rows} snapshots of {len(collector.pollers)} routers in "
          f"{len(collector.files)} files "
          f"under {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
