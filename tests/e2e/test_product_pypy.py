"""The PyPy router image (qdmesh/router-pypy, images/build.sh router-pypy) on the cluster: a
RouterMesh that names it becomes Ready and converged, its routers run on PyPy (their own
/metrics say so), and unsettled messages cross between them, each accepted and received once."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path
from typing import Any, List

from .kube import describe_namespace, eventually
from .mesh_fixtures import Timing, fresh_namespace, mesh_whole
from .product import (
    create_resource,
    http_forward,
    package_version,
    port_forwards,
    read_resource,
    status_summary,
)
from .traffic import cross_mesh

NAME = "fast"
SIZE = 2


def test_a_mesh_on_the_pypy_image(operator_namespace: str, core: Any, k8s: Any, e2e_kubeconfig: Path,
                                  timing: Timing) -> None:
    namespace = fresh_namespace(core, "pypy")
    try:
        started = time.monotonic()
        create_resource(k8s, namespace, "routermeshes", "RouterMesh", NAME,
                        {"size": SIZE, "image": f"qdmesh/router-pypy:{package_version()}"})
        history: List[str] = []
        eventually(lambda: mesh_whole(k8s, namespace, SIZE, history, started, name=NAME), 300,
                   f"RouterMesh {NAME} (PyPy image) Ready and MeshConverged", interval=1.0,
                   describe=lambda: "\n".join(history) + "\n" + describe_namespace(core, namespace))
        timing(f"RouterMesh of {SIZE} on the PyPy image created -> Ready and converged",
               time.monotonic() - started)
        routers = [f"{NAME}-{i}" for i in range(SIZE)]
        for router in routers:
            with http_forward(e2e_kubeconfig, namespace, f"pod/{router}", 8672) as base:
                with urllib.request.urlopen(f"{base}/metrics", timeout=10) as reply:
                    metrics = reply.read().decode()
            assert 'python="PyPy 3.' in metrics, f"{router} does not run on PyPy"
        with port_forwards(e2e_kubeconfig, namespace, routers) as urls:
            cross_mesh(urls, routers[0], routers[1], 50)
            cross_mesh(urls, routers[1], routers[0], 50)
    finally:
        print(status_summary(read_resource(k8s, namespace, "routermeshes", NAME)))
        core.delete_namespace(namespace, propagation_policy="Background")
