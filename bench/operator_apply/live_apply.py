"""Operator benchmark: how long a LinkRoute or AutoLink takes from being applied to being live
on every router of a local mesh of real router processes, and what reconciling many routing
resources costs the operator (CPU, memory, time).

The operator's own planner and applier (``sync_mesh``) do the work, exactly as in a
reconciliation; "live" is then confirmed by querying every router independently.  Kubernetes
(API server round trips, kopf's watch) is not part of these figures.

    python -m bench.operator_apply.live_apply --routers 5 --rounds 20 --resources 200
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from qdmesh_operator.apply.management import ClientPool, sync_mesh  # noqa: E402
from qdmesh_operator.model.mesh import parse_mesh  # noqa: E402
from qdmesh_operator.model.routing import RoutingSpec, parse_auto_link, parse_link_route  # noqa: E402
from qdrouter.tools.management_client import ManagementClient  # noqa: E402
from tests.mesh.meshproc import Mesh, build_mesh, start_order  # noqa: E402
from tests.operator.localmesh import local_state, urls  # noqa: E402

LINK_ROUTE = "org.apache.qpid.dispatch.router.config.linkRoute"
AUTO_LINK = "org.apache.qpid.dispatch.router.config.autoLink"


def start_mesh(workdir: Path, size: int) -> Mesh:
    names = [f"R{i}" for i in range(size)]
    edges = [(b, a, 1) for i, a in enumerate(names) for b in names[i + 1 :]]
    mesh = build_mesh(workdir, edges, names=names)
    for name in start_order(names, edges):
        mesh.routers[name].start()
    mesh.wait_converged(timeout=60)
    return mesh


def live_everywhere(checkers: Dict[str, ManagementClient], entity_type: str, name: str) -> bool:
    """Confirmed by each router's own answer, on connections that are not the operator's."""

    def check(client: ManagementClient) -> bool:
        return any(r.get("name") == name for r in client.query(entity_type))

    with ThreadPoolExecutor(len(checkers)) as workers:
        return all(workers.map(check, checkers.values()))


def percentile(values: List[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def summary(values: List[float]) -> Dict[str, float]:
    return {
        "median_ms": 1000 * statistics.median(values),
        "p95_ms": 1000 * percentile(values, 95),
        "max_ms": 1000 * max(values),
    }


def apply_one_by_one(mesh: Mesh, size: int, rounds: int) -> Dict[str, Any]:
    spec = parse_mesh(
        "demo",
        "bench",
        {
            "size": size,
            "image": "qdmesh/router:bench",
            "connectors": [{"name": "broker", "host": "127.0.0.1", "port": 1}],
        },
    )
    targets = urls(mesh)
    pool = ClientPool()  # the operator keeps its management connections open between changes
    checkers = {rid: ManagementClient(url, timeout=5) for rid, url in targets.items()}
    sync_mesh(local_state(spec, []), targets, pool=pool)  # connections up, broker connector created
    routing: List[RoutingSpec] = []
    timings: Dict[str, List[float]] = {"LinkRoute": [], "AutoLink": []}
    for i in range(rounds):
        for kind in ("LinkRoute", "AutoLink"):
            if kind == "LinkRoute":
                routing.append(
                    parse_link_route(
                        f"lr{i}",
                        {"meshRef": "demo", "prefix": f"lr{i}.", "connection": "broker", "direction": "in"},
                    )
                )
                entity_type, name = LINK_ROUTE, f"qdmesh/linkRoute/lr{i}-in"
            else:
                routing.append(
                    parse_auto_link(
                        f"al{i}",
                        {
                            "meshRef": "demo",
                            "address": f"queue/al{i}",
                            "direction": "out",
                            "connection": "broker",
                        },
                    )
                )
                entity_type, name = AUTO_LINK, f"qdmesh/autoLink/al{i}"
            start = time.monotonic()
            outcomes = sync_mesh(local_state(spec, routing), targets, pool=pool)
            assert all(o.in_sync for o in outcomes.values()), [o.error for o in outcomes.values()]
            if not live_everywhere(checkers, entity_type, name):
                raise AssertionError(f"{name} not live on every router after its reconciliation")
            timings[kind].append(time.monotonic() - start)
    pool.close()
    for client in checkers.values():
        client.close()
    return {kind: summary(values) for kind, values in timings.items()}


def reconcile_many(mesh: Mesh, size: int, count: int) -> Dict[str, Any]:
    spec = parse_mesh(
        "demo",
        "bench",
        {
            "size": size,
            "image": "qdmesh/router:bench",
            "connectors": [{"name": "broker", "host": "127.0.0.1", "port": 1}],
        },
    )
    routing: List[RoutingSpec] = []
    for i in range(count // 2):
        routing.append(
            parse_link_route(
                f"many-lr{i}",
                {"meshRef": "demo", "prefix": f"many{i}.", "connection": "broker", "direction": "in"},
            )
        )
        routing.append(
            parse_auto_link(
                f"many-al{i}",
                {"meshRef": "demo", "address": f"many/{i}", "direction": "out", "connection": "broker"},
            )
        )
    pool = ClientPool()
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    outcomes = sync_mesh(local_state(spec, routing), urls(mesh), pool=pool)
    first = time.monotonic() - start
    assert all(o.in_sync for o in outcomes.values())
    start = time.monotonic()
    outcomes = sync_mesh(local_state(spec, routing), urls(mesh), pool=pool)
    steady = time.monotonic() - start
    assert all(o.results == [] for o in outcomes.values())
    after = resource.getrusage(resource.RUSAGE_SELF)
    pool.close()
    return {
        "resources": count,
        "operations_first": count // 2 * 2 * size,
        "first_reconcile_s": first,
        "steady_reconcile_s": steady,
        "operator_cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "operator_max_rss_mib": after.ru_maxrss / 1024,
    }


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routers", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--resources", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qdmesh-bench-operator-") as tmp:
        mesh = start_mesh(Path(tmp), args.routers)
        try:
            results = {
                "routers": args.routers,
                "rounds": args.rounds,
                "apply_to_live": apply_one_by_one(mesh, args.routers, args.rounds),
                "many": reconcile_many(mesh, args.routers, args.resources),
            }
        finally:
            mesh.close()
            for router in mesh.routers.values():
                router.stop(check=False)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
