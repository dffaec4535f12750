"""/healthz and /readyz.

/healthz: the process and its loop answer (this page is computed in the loop's thread).
/readyz: the management agent answers a QUERY for the router entity, and an interior router
with inter-router connectors (a mesh it is expected to join) has a route to at least one
other router. One peer is enough: requiring every peer would make a whole mesh unready
(and take it out of its Service) when a single router is down. A draining router (after
SIGTERM: qdrouter/drain.py) is not ready: it takes no new clients."""

from __future__ import annotations

from typing import Any, List, Tuple

from ..management.messages import Request
from ..management.status import ManagementStatus

ROUTER_TYPE = "org.apache.qpid.dispatch.router"


def liveness(router: Any) -> Tuple[bool, str]:
    return True, f"ok: router {router.id} is running\n"


def readiness(router: Any) -> Tuple[bool, str]:
    problems: List[str] = []
    nodes = 0
    if router.drain.draining:
        problems.append(f"router {router.id} is draining: it is shutting down")
    try:
        code, body = router.agent.execute(Request("QUERY", {"entityType": ROUTER_TYPE},
                                                  {"attributeNames": ["id", "nodeCount"]}, None, None))
        results = body.get("results") if isinstance(body, dict) else None
        if code != 200 or not results:
            problems.append(f"management answered QUERY with status {code}")
        else:
            nodes = int(results[0][1] or 0)
    except ManagementStatus as status:
        problems.append(f"management answered QUERY with status {status.code}: {status.description}")
    if router.mesh is not None and _expects_peers(router) and not problems and nodes == 0:
        problems.append("no other router of the mesh is reachable yet "
                        f"({len(_inter_router_connectors(router))} inter-router connectors configured)")
    if problems:
        return False, "".join(f"not ready: {problem}\n" for problem in problems)
    return True, f"ready: management answers; {nodes} other routers known\n"


def _inter_router_connectors(router: Any) -> List[Any]:
    return [connector for connector in router.connectors.values()
            if connector.settings.role == "inter-router"]


def _expects_peers(router: Any) -> bool:
    return bool(_inter_router_connectors(router))
