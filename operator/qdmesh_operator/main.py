"""``qdmesh-operator``: run the operator (kopf) for one or more namespaces or the whole cluster."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import List

from . import contract

LOG_LEVELS = ("debug", "info", "warning", "error")


def parse_args(argv: List[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="qdmesh-operator",
        description="Reconciles RouterMesh, LinkRoute, AutoLink and VhostPolicy resources.")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", default=None, metavar="NS",
                       help="watch this namespace (repeatable); default: $QDMESH_WATCH_NAMESPACES, "
                            "or every namespace when that is empty")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace")
    parser.add_argument("--health-port", type=int, default=None,
                        help="port of GET /healthz (default $QDMESH_HEALTH_PORT or 8080; 0: none)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="port of GET /metrics (default $QDMESH_METRICS_PORT or 9090; 0: none)")
    parser.add_argument("--drift-interval", type=float, default=None,
                        help="seconds between drift checks of a mesh (default $QDMESH_DRIFT_INTERVAL or 30)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default=None,
                        help="default $QDMESH_LOG_LEVEL or info")
    parser.add_argument("--version", action="version",
                        version=f"qdmesh-operator {contract.package_version()}")
    args = parser.parse_args(argv)
    for flag in ("health_port", "metrics_port"):
        value = getattr(args, flag)
        if value is not None and not 0 <= value <= 65535:
            parser.error(f"--{flag.replace('_', '-')}: {value} is not a port number")
    if args.drift_interval is not None and args.drift_interval <= 0:
        parser.error("--drift-interval must be a positive number of seconds")
    level = args.log_level or os.environ.get("QDMESH_LOG_LEVEL", "info").lower()
    if level not in LOG_LEVELS:
        parser.error(f"QDMESH_LOG_LEVEL={level!r}: choose one of {', '.join(LOG_LEVELS)}")
    args.log_level = level
    return args


def main(argv: List[str] | None = None) -> int:
    args = parse_args(argv)
    # Settings are read when the handlers module is imported (the drift timer's interval).
    for flag, env in (("health_port", "QDMESH_HEALTH_PORT"), ("metrics_port", "QDMESH_METRICS_PORT"),
                      ("drift_interval", "QDMESH_DRIFT_INTERVAL")):
        if getattr(args, flag) is not None:
            os.environ[env] = str(getattr(args, flag))
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    import kopf

    from . import handlers  # noqa: F401  (registers the handlers)
    from .config import SETTINGS

    namespaces = args.namespace
    if not args.all_namespaces and not namespaces:
        watch = os.environ.get("QDMESH_WATCH_NAMESPACES", "")
        namespaces = [n.strip() for n in watch.split(",") if n.strip()]
    clusterwide = args.all_namespaces or not namespaces
    liveness = f"http://0.0.0.0:{SETTINGS.health_port}/healthz" if SETTINGS.health_port else None
    try:
        kopf.run(standalone=True, clusterwide=clusterwide, namespaces=[] if clusterwide else namespaces,
                 liveness_endpoint=liveness)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
