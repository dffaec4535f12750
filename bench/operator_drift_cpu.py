"""CPU of one drift check of a mesh nobody changed: the reconciliation in this process against
a real API server (etcd + kube-apiserver from tests/e2e/cluster/build.sh), its statuses
written as the kopf handlers write them.  ``--operator-src`` runs another checkout's
qdmesh_operator package, to compare.

    python -m bench.operator_drift_cpu [--operator-src OTHER/operator]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, List

REPO = Path(__file__).resolve().parents[1]


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--operator-src", type=Path, default=REPO / "operator")
    parser.add_argument("--meshes", type=int, default=5)
    parser.add_argument("--link-routes", type=int, default=30, help="spread over the meshes")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    sys.path[:0] = [str(args.operator_src), str(REPO / "router"), str(REPO)]
    from kubernetes import client

    from bench.operator_soak import install_crds
    from qdmesh_operator.kube import KubeApi
    from qdmesh_operator.reconcile import MeshReconciler
    from tests.kube.controlplane import start_control_plane

    plane = start_control_plane(Path(tempfile.mkdtemp(prefix="qdmesh-drift-cpu-")) / "plane")
    try:
        install_crds(plane)
        client.CoreV1Api(plane.api_client()).create_namespace({"metadata": {"name": "drift"}})
        custom = client.CustomObjectsApi(plane.api_client())

        def create(plural: str, kind: str, name: str, spec: Any) -> None:
            custom.create_namespaced_custom_object("qdmesh.io", "v1alpha1", "drift", plural, {
                "apiVersion": "qdmesh.io/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec})

        for i in range(args.meshes):
            create("routermeshes", "RouterMesh", f"m{i}", {"size": 3, "image": "qdmesh/router:0.1.0"})
        for i in range(args.link_routes):
            create("linkroutes", "LinkRoute", f"l{i}",
                   {"meshRef": f"m{i % args.meshes}", "prefix": f"p{i}.", "containerId": "c"})
        kube = KubeApi(plane.api_client())
        reconciler = MeshReconciler(kube, urls=lambda mesh, pods: {})
        writes = 0

        def drift(i: int) -> int:
            report = reconciler.reconcile("drift", f"m{i}", "drift")
            written = 0
            for (plural, name), status in report.statuses.items():
                if (plural, name) not in getattr(report, "unchanged", ()):
                    kube.patch_status(plural, "drift", name, status)
                    written += 1
            return written

        for _ in range(2):  # statuses written, every code path used once
            for i in range(args.meshes):
                drift(i)
        start = time.process_time()
        for _ in range(args.rounds):
            for i in range(args.meshes):
                writes += drift(i)
        checks = args.rounds * args.meshes
        print(f"{args.operator_src}: {(time.process_time() - start) / checks * 1000:.1f} ms CPU per drift "
              f"check of a 3-router mesh with {args.link_routes / args.meshes:g} link routes; "
              f"{writes / checks:.1f} status writes per check")
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
