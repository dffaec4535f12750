"""Prometheus metrics of the operator: reconciliations (count, errors, latency) and the live
operations they sent to routers, served as text at /metrics."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Tuple

from .mesh_gauges import MESH_GAUGES

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reconciles: Dict[Tuple[str, str], int] = {}
        self.errors: Dict[str, int] = {}
        self.operations: Dict[str, int] = {}
        self.repairs = 0
        self.buckets: List[int] = [0] * len(BUCKETS)
        self.seconds_sum = 0.0
        self.seconds_count = 0
        #: Grant redemptions answered, by HTTP status (grants/server.py).
        self.redemptions: Dict[int, int] = {}

    def redemption(self, status: int) -> None:
        with self._lock:
            self.redemptions[status] = self.redemptions.get(status, 0) + 1

    def reconciled(self, why: str, result: str, seconds: float, operations: int, failures: int,
                   repaired: int) -> None:
        with self._lock:
            key = (why, result)
            self.reconciles[key] = self.reconciles.get(key, 0) + 1
            if result == "error":
                self.errors[why] = self.errors.get(why, 0) + 1
            self.operations["ok"] = self.operations.get("ok", 0) + operations - failures
            self.operations["refused"] = self.operations.get("refused", 0) + failures
            self.repairs += repaired
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.buckets[i] += 1
            self.seconds_sum += seconds
            self.seconds_count += 1

    def render(self) -> str:
        with self._lock:
            lines = ["# HELP qdmesh_operator_reconciles_total Reconciliations by trigger and result.",
                     "# TYPE qdmesh_operator_reconciles_total counter"]
            lines += [f'qdmesh_operator_reconciles_total{{why="{w}",result="{r}"}} {n}'
                      for (w, r), n in sorted(self.reconciles.items())]
            lines += ["# HELP qdmesh_operator_reconcile_errors_total Reconciliations that raised an error.",
                      "# TYPE qdmesh_operator_reconcile_errors_total counter"]
            lines += [f'qdmesh_operator_reconcile_errors_total{{why="{w}"}} {n}'
                      for w, n in sorted(self.errors.items())]
            lines += ["# HELP qdmesh_operator_router_operations_total Management operations sent to routers.",
                      "# TYPE qdmesh_operator_router_operations_total counter"]
            lines += [f'qdmesh_operator_router_operations_total{{result="{r}"}} {n}'
                      for r, n in sorted(self.operations.items())]
            lines += ["# HELP qdmesh_operator_drift_repairs_total Operations undoing hand-made changes.",
                      "# TYPE qdmesh_operator_drift_repairs_total counter",
                      f"qdmesh_operator_drift_repairs_total {self.repairs}",
                      "# HELP qdmesh_operator_reconcile_seconds Time one reconciliation took.",
                      "# TYPE qdmesh_operator_reconcile_seconds histogram"]
            for bound, count in zip(BUCKETS, self.buckets):
                lines.append(f'qdmesh_operator_reconcile_seconds_bucket{{le="{bound}"}} {count}')
            lines += [f'qdmesh_operator_reconcile_seconds_bucket{{le="+Inf"}} {self.seconds_count}',
                      f"qdmesh_operator_reconcile_seconds_sum {self.seconds_sum:.6f}",
                      f"qdmesh_operator_reconcile_seconds_count {self.seconds_count}"]
            lines += ["# HELP qdmesh_operator_grant_redemptions_total MeshAccessGrant redemptions answered, "
                      "by HTTP status.", "# TYPE qdmesh_operator_grant_redemptions_total counter"]
            lines += [f'qdmesh_operator_grant_redemptions_total{{status="{code}"}} {n}'
                      for code, n in sorted(self.redemptions.items())]
            return "\n".join(lines) + "\n"


METRICS = Metrics()


async def serve(port: int, host: str = "0.0.0.0") -> Any:
    """Start the /metrics HTTP server (aiohttp comes with kopf); returns its runner."""
    from aiohttp import web

    async def handle(_request: web.Request) -> web.Response:
        text = METRICS.render() + MESH_GAUGES.render()
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    app = web.Application()
    app.router.add_get("/metrics", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
