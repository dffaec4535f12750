"""Session fixtures of the product suite: the Helm chart installed from this checkout and one
RouterMesh shared by every ``test_product_*`` file (they run in conftest.SUITE_ORDER; each later test
relies on the earlier ones having left the mesh Ready with ``MeshState.size`` routers).
conftest.py imports these fixtures so that pytest finds them.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
from kubernetes import client

from tests.prerequisites import require

from .kube import describe_namespace, eventually
from .product import (
    PodIdentity,
    crds_established,
    create_resource,
    deployment_ready,
    helm_binary,
    helm_install,
    helm_uninstall,
    is_true,
    read_resource,
    router_pods,
    status_summary,
)

MESH = "mesh"
SIZE = 3
Timing = Callable[[str, float], None]


def fresh_namespace(core: Any, stem: str) -> str:
    name = f"e2e-{stem}-{uuid.uuid4().hex[:5]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


@pytest.fixture(scope="session")
def operator_namespace(core: Any, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> Iterator[str]:
    """The chart installed from this checkout, using the images already on the nodes."""
    helm = helm_binary()
    require(helm is not None, "helm (.ci/setup.d/30-helm-tools.sh)")
    assert helm is not None
    namespace = fresh_namespace(core, "qdmesh-system")
    started = time.monotonic()
    # No image.tag and no routerImage: the chart's operator image and the operator's router image
    # are both those of the package version by default (checked in test_product_mesh.py).
    helm_install(helm, e2e_kubeconfig, "qdmesh", namespace, {
        "image.pullPolicy": "Never", "operator.logLevel": "info",
    })
    try:
        describe = lambda: describe_namespace(core, namespace)  # noqa: E731
        eventually(lambda: crds_established(k8s), 60, "the chart's CRDs Established", describe=describe)
        eventually(lambda: deployment_ready(k8s, namespace, "qdmesh"), 120, "operator Deployment ready",
                   describe=describe)
        timing("helm install -> CRDs established, operator ready", time.monotonic() - started)
        yield namespace
    finally:
        print_operator_log(core, namespace)
        helm_uninstall(helm, e2e_kubeconfig, "qdmesh", namespace)
        core.delete_namespace(namespace, propagation_policy="Background")


def print_operator_log(core: Any, namespace: str, lines: int = 60) -> None:
    for pod in core.list_namespaced_pod(namespace).items:
        try:
            log = core.read_namespaced_pod_log(pod.metadata.name, namespace, tail_lines=lines)
        except client.ApiException as e:
            log = f"(no log: {e.reason})"
        print(f"\n--- operator pod {pod.metadata.name}, last lines:\n{log}")


class MeshState:
    """What the tests learn about the shared mesh as they go."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.ready = False
        self.size = SIZE
        self.pods: Dict[str, PodIdentity] = {}

    @property
    def routers(self) -> List[str]:
        return [f"{MESH}-{i}" for i in range(self.size)]

    def require_ready(self) -> None:
        assert self.ready and len(self.pods) == self.size, \
            "the mesh is not Ready as the earlier tests left it (see the first failure above)"


def mesh_whole(k8s: Any, namespace: str, size: int, history: List[str] | None = None,
               since: float | None = None, name: str = MESH) -> bool:
    """RouterMesh ``name`` is Ready and converged for its current spec, with ``size`` routers all
    ready. ``history`` collects each new status summary (with seconds since ``since``)."""
    obj = read_resource(k8s, namespace, "routermeshes", name)
    status = obj.get("status") or {}
    statuses = status.get("routerStatus") or []
    if history is not None:
        summary = f"{status_summary(obj)}; readyRouters={status.get('readyRouters')}"
        if not history or not history[-1].endswith(summary):
            elapsed = time.monotonic() - (since or time.monotonic())
            history.append(f"+{elapsed:5.1f} s  {summary}")
    return bool(is_true(obj, "Ready") and is_true(obj, "MeshConverged") and status.get("readyRouters") == size
                and len(statuses) == size and all(r.get("ready") for r in statuses))


@pytest.fixture(scope="session")
def mesh(operator_namespace: str, core: Any, k8s: Any, timing: Timing) -> Iterator[MeshState]:
    namespace = fresh_namespace(core, "mesh")
    state = MeshState(namespace)
    started = time.monotonic()
    create_resource(k8s, namespace, "routermeshes", "RouterMesh", MESH, {"size": SIZE})
    try:
        eventually(lambda: mesh_whole(k8s, namespace, SIZE), 240,
                   f"RouterMesh {MESH} Ready and MeshConverged", interval=1.0,
                   describe=lambda: status_summary(read_resource(k8s, namespace, "routermeshes", MESH)) +
                   "\n" + describe_namespace(core, namespace))
        timing(f"RouterMesh of {SIZE} created -> Ready and converged", time.monotonic() - started)
        state.ready = True
        state.pods = router_pods(k8s, namespace, MESH)
        yield state
    finally:
        if not state.ready:
            print(describe_namespace(core, namespace))
        core.delete_namespace(namespace, propagation_policy="Background")
