"""``qdmesh-operator``: run the operator (kopf) for one or more namespaces or the whole cluster."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import socket
import sys
import threading
from typing import Any, List

from . import contract
from .leader import LeaderElector, LeaseSettings

log = logging.getLogger("qdmesh.operator")

LOG_LEVELS = ("debug", "info", "warning", "error")
# The operator extra's modules (pyproject.toml, [project.optional-dependencies] operator).
OPERATOR_EXTRA = ("kopf", "kubernetes", "jinja2", "yaml", "cryptography")


def missing_extra() -> str | None:
    """One line naming the operator extra's modules that are not installed, or None."""
    missing = [name for name in OPERATOR_EXTRA if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (f"qdmesh-operator: needs the qdmesh package's [operator] extra ({', '.join(missing)} "
            f"not installed): in a clone of qdmesh, pip install '.[operator]'")


def parse_args(argv: List[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="qdmesh-operator",
        description="Reconciles RouterMesh, LinkRoute, AutoLink, VhostPolicy and MeshAccessGrant resources.")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", default=None, metavar="NS",
                       help="watch this namespace (repeatable); default: $QDMESH_WATCH_NAMESPACES, "
                            "or every namespace when that is empty")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace")
    parser.add_argument("--health-port", type=int, default=None,
                        help="port of GET /healthz (default $QDMESH_HEALTH_PORT or 8080; 0: none)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="port of GET /metrics (default $QDMESH_METRICS_PORT or 9090; 0: none)")
    parser.add_argument("--grant-server-port", type=int, default=None,
                        help="port of the MeshAccessGrant redemption server (HTTPS; default "
                             "$QDMESH_GRANT_SERVER_PORT or 8443; 0: none)")
    parser.add_argument("--drift-interval", type=float, default=None,
                        help="seconds between drift checks of a mesh (default $QDMESH_DRIFT_INTERVAL or 30)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default=None,
                        help="default $QDMESH_LOG_LEVEL or info")
    election = parser.add_argument_group(
        "leader election", "several replicas, one reconciling, on a coordination.k8s.io Lease")
    election.add_argument("--leader-election", action=argparse.BooleanOptionalAction, default=None,
                          help="hold a Lease before reconciling (default $QDMESH_LEADER_ELECTION, else off)")
    election.add_argument("--lease-name", default=None,
                          help="the Lease's name (default $QDMESH_LEASE_NAME or qdmesh-operator)")
    election.add_argument("--lease-namespace", default=None,
                          help="the Lease's namespace (default $POD_NAMESPACE)")
    election.add_argument("--lease-duration", type=float, default=15.0, metavar="S",
                          help="seconds a standby waits on a Lease that is not renewed")
    election.add_argument("--lease-renew-deadline", type=float, default=10.0, metavar="S",
                          help="seconds the leader keeps reconciling without renewing, then exits")
    election.add_argument("--lease-retry-period", type=float, default=2.0, metavar="S",
                          help="seconds between attempts to take or renew the Lease")
    parser.add_argument("--version", action="version",
                        version=f"qdmesh-operator {contract.package_version()}")
    args = parser.parse_args(argv)
    for flag in ("health_port", "metrics_port", "grant_server_port"):
        value = getattr(args, flag)
        if value is not None and not 0 <= value <= 65535:
            parser.error(f"--{flag.replace('_', '-')}: {value} is not a port number")
    if args.drift_interval is not None and args.drift_interval <= 0:
        parser.error("--drift-interval must be a positive number of seconds")
    level = args.log_level or os.environ.get("QDMESH_LOG_LEVEL", "info").lower()
    if level not in LOG_LEVELS:
        parser.error(f"QDMESH_LOG_LEVEL={level!r}: choose one of {', '.join(LOG_LEVELS)}")
    args.log_level = level
    args.lease = lease_settings(parser, args)
    return args


def lease_settings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> LeaseSettings | None:
    """The Lease to hold, or None without leader election; a usage error for bad settings."""
    enabled = args.leader_election
    if enabled is None:
        value = os.environ.get("QDMESH_LEADER_ELECTION", "false").strip().lower()
        if value not in ("true", "false", ""):
            parser.error(f"QDMESH_LEADER_ELECTION={value!r}: use true or false")
        enabled = value == "true"
    if not enabled:
        return None
    namespace = args.lease_namespace or os.environ.get("POD_NAMESPACE", "")
    if not namespace:
        parser.error("--leader-election needs --lease-namespace or $POD_NAMESPACE")
    # The pod's name where there is one (the chart sets POD_NAME), so `kubectl get lease`
    # names the leading pod.
    identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    settings = LeaseSettings(name=args.lease_name or os.environ.get("QDMESH_LEASE_NAME") or "qdmesh-operator",
                             namespace=namespace, identity=identity, duration_s=args.lease_duration,
                             renew_deadline_s=args.lease_renew_deadline, retry_s=args.lease_retry_period)
    problem = settings.problem()
    if problem:
        parser.error(f"--lease-duration {settings.duration_s:g}, --lease-renew-deadline "
                     f"{settings.renew_deadline_s:g}, --lease-retry-period {settings.retry_s:g}: {problem}")
    return settings


def kube_api_client() -> Any:
    """A client for the API server, found as the handlers find it."""
    from kubernetes import config as kube_config

    from .config import load_kube_credentials
    from .kube.apiclient import TimedApiClient

    try:
        load_kube_credentials()
    except (kube_config.ConfigException, OSError) as e:
        raise SystemExit(f"qdmesh-operator: leader election needs the API server, and "
                         f"neither the in-cluster config nor a kubeconfig is usable: {e}") from None
    return TimedApiClient()


def lease_owner(api_client: Any, settings: LeaseSettings) -> LeaseSettings:
    """``settings`` with the Lease's owner reference: the Deployment $QDMESH_LEASE_OWNER
    (``deployment/NAME``) names, in the Lease's namespace.  Without it, or when it cannot be
    read, the Lease has no owner (it is still deleted when the leader stops cleanly)."""
    import dataclasses

    from kubernetes import client

    wanted = os.environ.get("QDMESH_LEASE_OWNER", "").strip()
    if not wanted:
        return settings
    kind, _, name = wanted.partition("/")
    if kind.lower() != "deployment" or not name:
        log.warning("QDMESH_LEASE_OWNER=%r: expected deployment/NAME; the Lease gets no owner", wanted)
        return settings
    try:
        found = client.AppsV1Api(api_client).read_namespaced_deployment(name, settings.namespace)
    except Exception as e:
        log.warning("the Lease gets no owner: cannot read Deployment %s/%s: %s", settings.namespace, name,
                    getattr(e, "reason", None) or e)
        return settings
    uid = found.metadata.uid if found.metadata is not None else None
    if not uid:
        return settings
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": uid}
    return dataclasses.replace(settings, owner=owner)


def become_leader(settings: LeaseSettings, health_port: int) -> LeaderElector | None:
    """Waits for the Lease, answering the kubelet's probes meanwhile; None when told to stop
    first. Once it holds the Lease, a thread renews it; losing it ends the process at once
    (as client-go's controllers do): another replica may be reconciling by then."""
    from . import leader
    from .standby import standby_health

    api_client = kube_api_client()
    settings = lease_owner(api_client, settings)
    elector = LeaderElector(api_client, settings)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with standby_health(health_port):
            if not elector.acquire(stop):
                return None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def lost() -> None:
        # At once, from the renewal or watchdog thread: kopf's tasks and the reconciliations
        # in worker threads stop with the process, before another replica can take over (the
        # renew deadline is shorter than the lease duration).  The kubelet restarts the pod,
        # which waits as a standby.
        log.error("stopping: this replica no longer holds the Lease")
        logging.shutdown()
        os._exit(1)

    leader.ACTIVE = elector
    elector.keep(lost)
    return elector


def main(argv: List[str] | None = None) -> int:
    args = parse_args(argv)
    problem = missing_extra()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    # Settings are read when the handlers module is imported (the drift timer's interval).
    for flag, env in (("health_port", "QDMESH_HEALTH_PORT"), ("metrics_port", "QDMESH_METRICS_PORT"),
                      ("drift_interval", "QDMESH_DRIFT_INTERVAL"),
                      ("grant_server_port", "QDMESH_GRANT_SERVER_PORT")):
        if getattr(args, flag) is not None:
            os.environ[env] = str(getattr(args, flag))
    from .grants.settings import DEFAULT_PORT, PORT_ENV

    os.environ.setdefault(PORT_ENV, str(DEFAULT_PORT))
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from . import memtrace

    memtrace.install()
    import kopf

    from . import handlers  # noqa: F401  (registers the handlers)
    from .config import SETTINGS

    namespaces = args.namespace
    if not args.all_namespaces and not namespaces:
        watch = os.environ.get("QDMESH_WATCH_NAMESPACES", "")
        namespaces = [n.strip() for n in watch.split(",") if n.strip()]
    clusterwide = args.all_namespaces or not namespaces
    liveness = f"http://0.0.0.0:{SETTINGS.health_port}/healthz" if SETTINGS.health_port else None
    elector = None
    if args.lease is not None:
        elector = become_leader(args.lease, SETTINGS.health_port)
        if elector is None:
            return 0
    try:
        kopf.run(standalone=True, clusterwide=clusterwide, namespaces=[] if clusterwide else namespaces,
                 liveness_endpoint=liveness)
    except KeyboardInterrupt:
        return 0
    finally:
        if elector is not None:
            elector.release()  # a standby takes over at once, not a lease duration later
    return 0


if __name__ == "__main__":
    sys.exit(main())
