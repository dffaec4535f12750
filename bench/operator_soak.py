"""Operator soak: the operator's memory and CPU against a real API server as meshes and routing
resources come and go.  ``qdmesh-operator`` runs as its own process (so its resident set is
its own) against etcd + kube-apiserver started from the Kubernetes binaries
(tests/e2e/cluster/build.sh); with ``--controllers`` the controller manager and scheduler run
too (StatefulSets get pods, the garbage collector deletes what a RouterMesh owned).

There is no kubelet: router pods are stored, never run, so no mesh of the API server has a
router to manage.  ``--live N`` gives the first N meshes (size 1) a local router process each
(QDMESH_ROUTER_URLS), so management connections and the live sync are part of the run.

Phases: the operator empty; ``--meshes`` RouterMeshes created and reconciled; idle for
``--idle`` seconds (the drift checks' CPU); ``--rounds`` rounds of creating ``--churn``
routing resources (LinkRoutes, AutoLinks, VhostPolicies in turn, spread over the meshes),
waiting until each has a status, deleting them and waiting until each is gone; idle again.
The operator's RSS (/proc) is sampled after each step and printed as a Markdown table.

    python -m bench.operator_soak --meshes 200 --rounds 5 --churn 150 --live 2
    python -m bench.operator_soak --quick          # the shortened run
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.operator_soak_cluster import (  # noqa: E402
    KINDS,
    Soak,
    cpu_s,
    install_crds,
    routing_spec,
    rss_mib,
    start_routers,
    wait,
)
from tests.kube.controlplane import start_control_plane  # noqa: E402


def churn_round(soak: Soak, meshes: List[str], count: int, round_no: int,
                timeout: float) -> Tuple[float, float]:
    """Create ``count`` routing resources, wait for their statuses, delete them, wait until they
    are gone; returns (seconds to create, seconds to delete)."""
    made: Dict[str, List[str]] = {plural: [] for plural, _ in KINDS}
    start = time.monotonic()
    for i in range(count):
        plural, kind = KINDS[i % len(KINDS)]
        name = f"r{round_no}-{i}"
        soak.create(plural, kind, name, routing_spec(kind, meshes[i % len(meshes)], i))
        made[plural].append(name)
    for plural, names in made.items():
        wait(lambda p=plural, n=names: soak.all_observed(p, n), timeout,  # type: ignore[misc]
             f"{plural} of round {round_no} observed")
    created = time.monotonic() - start
    start = time.monotonic()
    for plural, names in made.items():
        for name in names:
            soak.delete(plural, name)
    for plural, names in made.items():
        gone = set(names)
        wait(lambda p=plural, g=gone: not g & {i["metadata"]["name"] for i in soak.items(p)},  # type: ignore[misc]
             timeout, f"{plural} of round {round_no} gone")
    return created, time.monotonic() - start


#: What the API server answers a drift check with, counted in the idle phases.
VERBS = ("GET", "LIST", "APPLY", "PATCH", "DELETE")


def idle(soak: Soak, seconds: float, phase: str) -> Tuple[float, Dict[str, int]]:
    """CPU seconds per second the operator spends over ``seconds`` of nothing changing, and
    the requests the API server answered meanwhile, by verb."""
    assert soak.proc is not None
    soak.sample(f"{phase} (start)")
    requests = {verb: soak.plane.requests_made(verb) for verb in VERBS}
    before = cpu_s(soak.proc.pid)
    time.sleep(seconds)
    used = cpu_s(soak.proc.pid) - before
    requests = {verb: soak.plane.requests_made(verb) - count for verb, count in requests.items()}
    soak.sample(f"{phase} (end)")
    return used / seconds, requests


def run(args: argparse.Namespace, work: Path) -> Dict[str, Any]:
    plane = start_control_plane(work / "plane", controllers=args.controllers)
    routers: List[Any] = []
    soak: Soak | None = None
    try:
        install_crds(plane)
        namespace = "soak"
        from kubernetes import client

        client.CoreV1Api(plane.api_client()).create_namespace({"metadata": {"name": namespace}})
        soak = Soak(plane, namespace, work, tracemalloc=args.tracemalloc, operator_src=args.operator_src)
        routers = start_routers(work, args.live)
        meshes = [f"m{i:03d}" for i in range(args.meshes)]
        urls = {f"{namespace}/{meshes[i]}-0": r.url for i, r in enumerate(routers)}
        soak.start_operator(urls, args.drift)
        soak.wait_started(args.timeout)
        time.sleep(args.settle)
        empty = soak.sample("empty")
        soak.snapshot("empty")
        start = time.monotonic()
        for i, name in enumerate(meshes):
            size = 1 if i < args.live else args.size
            soak.create("routermeshes", "RouterMesh", name, {"size": size, "image": "qdmesh/router:0.1.0"})
        wait(lambda: soak.all_observed("routermeshes", meshes), args.timeout, "every mesh observed")
        mesh_seconds = time.monotonic() - start
        soak.sample(f"{args.meshes} meshes reconciled")
        cpu_idle, requests_idle = idle(soak, args.idle, "idle")
        soak.snapshot("meshes")
        with_meshes = soak.samples[-1][2]
        rounds = []
        for r in range(args.rounds):
            created, deleted = churn_round(soak, meshes, args.churn, r, args.timeout)
            rounds.append((created, deleted))
            soak.sample(f"churn {r + 1}: {args.churn} made+gone")
            if r == 0:
                soak.snapshot("churn 1")
        cpu_after, _ = idle(soak, args.idle, "idle after churn")
        soak.snapshot("churned")
        for first, second in (("empty", "meshes"), ("churn 1", "churned")):
            print("\n".join(soak.compare(first, second)))
        return {"meshes": args.meshes, "empty": empty, "with_meshes": with_meshes,
                "per_mesh": (with_meshes - empty) / max(1, args.meshes), "mesh_seconds": mesh_seconds,
                "cpu_idle": cpu_idle, "cpu_after": cpu_after, "rounds": rounds,
                "requests_idle": requests_idle,
                "churn_growth": soak.samples[-1][2] - with_meshes, "samples": soak.samples,
                "churned": args.churn * args.rounds}
    finally:
        if soak is not None:
            soak.stop_operator()
        for router in routers:
            router.stop(check=False)
        plane.stop()


def connection_cost(work: Path, count: int) -> str:
    """RSS of this process per open management connection (the operator keeps one per ready
    router): ``count`` ManagementClients to one local router, each having answered a QUERY."""
    from qdrouter.tools.management_client import ManagementClient

    router = start_routers(work, 1)[0]
    clients = []
    try:
        warm = ManagementClient(router.url, timeout=10.0)
        warm.query("org.apache.qpid.dispatch.router")
        before = rss_mib(os.getpid())
        for _ in range(count):
            clients.append(ManagementClient(router.url, timeout=10.0))
            clients[-1].query("org.apache.qpid.dispatch.router.config.linkRoute")
        after = rss_mib(os.getpid())
        warm.close()
    finally:
        for client in clients:
            client.close()
        router.stop(check=False)
    return (f"- management connections: {count} open (plain AMQP), RSS {before:.1f} -> {after:.1f} MiB: "
            f"{(after - before) * 1024 / count:.0f} KiB each")


def report(result: Dict[str, Any], args: argparse.Namespace) -> str:
    lines = ["| phase | elapsed s | RSS MiB | CPU s |", "|---|---:|---:|---:|"]
    lines += [f"| {p} | {t:.0f} | {rss:.1f} | {cpu:.1f} |" for p, t, rss, cpu in result["samples"]]
    churned = max(1, result["churned"])
    lines += [
        "",
        f"- RSS empty {result['empty']:.1f} MiB; with {result['meshes']} meshes "
        f"{result['with_meshes']:.1f} MiB: "
        f"{result['per_mesh'] * 1024:.0f} KiB per mesh; {result['meshes']} meshes reconciled in "
        f"{result['mesh_seconds']:.0f} s",
        f"- idle CPU (drift every {args.drift:g} s): {result['cpu_idle']:.3f} core with the meshes, "
        f"{result['cpu_after']:.3f} core after the churn",
        f"- API server requests in {args.idle:g} s idle with the meshes: " + ", ".join(
            f"{verb} {count} ({count * args.drift / args.idle / max(1, result['meshes']):.1f} per mesh "
            f"per drift check)" for verb, count in result["requests_idle"].items()),
        f"- churn: {result['churned']} routing resources made and deleted; RSS "
        f"{result['churn_growth']:+.1f} MiB over the churn "
        f"({result['churn_growth'] * 1024 / churned:+.2f} KiB per resource churned)",
    ]
    for i, (made, gone) in enumerate(result["rounds"]):
        lines.append(f"- churn {i + 1}: {args.churn} made in {made:.1f} s "
                     f"({args.churn / made:.1f}/s), deleted in {gone:.1f} s ({args.churn / gone:.1f}/s)")
    return "\n".join(lines)


def main(argv: List[str] | None = None) -> int:
    # SIGTERM (a timeout) as an exit, so the API server, routers and operator are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--meshes", type=int, default=200)
    parser.add_argument("--size", type=int, default=3, help="routers per mesh (without --live)")
    parser.add_argument("--live", type=int, default=2, help="meshes with a local router process")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--churn", type=int, default=150, help="routing resources per round")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of each idle phase")
    parser.add_argument("--drift", type=float, default=30.0, help="the operator's --drift-interval")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after the operator answers")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--controllers", action="store_true",
                        help="run kube-controller-manager and kube-scheduler too")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="trace the operator's allocations; print what grew between phases")
    parser.add_argument("--operator-src", type=Path, default=REPO / "operator",
                        help="the directory holding the qdmesh_operator package to run (another checkout's)")
    parser.add_argument("--connections", type=int, default=0,
                        help="only measure the memory of this many management connections")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    parser.add_argument("--quick", action="store_true",
                        help="the shortened run (a few minutes): 20 meshes, 3 rounds of 30, 20 s idle")
    args = parser.parse_args(argv)
    if args.quick:
        args.meshes, args.rounds, args.churn, args.idle, args.live = 20, 3, 30, 20.0, 1
    work = Path(tempfile.mkdtemp(prefix="qdmesh-operator-soak-"))
    if args.connections:
        try:
            print(connection_cost(work, args.connections))
        finally:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        return 0
    try:
        result = run(args, work)
    finally:
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"operator soak, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
          f"python -m bench.operator_soak {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(report(result, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
