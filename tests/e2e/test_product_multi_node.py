"""Several nodes (``tests/e2e/cluster/kind.sh up``: a control plane and two workers): a RouterMesh
of 3 whose ``spec.pod`` asks for topology spread over host names lands on different nodes and
converges across them (inter-router links between nodes). Skipped where fewer than two nodes
take pods (the single-node local cluster).

The constraint honours taints (``nodeTaintsPolicy: Honor``): by default a tainted control plane
counts as an empty domain, and with two workers the third router would stay Pending."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from .kube import describe_namespace, eventually
from .mesh_fixtures import Timing, fresh_namespace, mesh_whole
from .nodes import need_nodes, spread
from .product import create_resource

NAME = "spread"
SIZE = 3


def test_routers_spread_over_the_nodes(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> None:
    nodes = need_nodes(core)
    namespace = fresh_namespace(core, "spread")
    started = time.monotonic()
    create_resource(k8s, namespace, "routermeshes", "RouterMesh", NAME,
                    {"size": SIZE, "pod": {"topologySpreadConstraints": [spread("qdmesh.io/mesh", NAME)]}})
    try:
        took = eventually(lambda: mesh_whole(k8s, namespace, SIZE, name=NAME), 300,
                          f"RouterMesh of {SIZE} spread over {len(nodes)} nodes Ready and converged",
                          interval=1.0, describe=lambda: describe_namespace(core, namespace))
        timing(f"RouterMesh of {SIZE} spread over {len(nodes)} nodes -> Ready and converged", took)
        pods = core.list_namespaced_pod(namespace, label_selector=f"qdmesh.io/mesh={NAME}").items
        per_node = Counter(pod.spec.node_name for pod in pods)
        print(f"routers per node: {dict(per_node)} ({time.monotonic() - started:.1f} s)")
        assert sum(per_node.values()) == SIZE
        assert len(per_node) == min(SIZE, len(nodes)), per_node
        assert max(per_node.values()) - min(per_node.values()) <= 1, per_node
    finally:
        core.delete_namespace(namespace, propagation_policy="Background")
