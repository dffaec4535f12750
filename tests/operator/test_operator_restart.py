"""``qdmesh-operator`` as a process against a REAL API server and a real local mesh:
SIGKILLed mid-reconcile and started again, it converges without duplicating anything."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.kube.controlplane import ControlPlane
from tests.mesh.conftest import MeshFactory
from tests.operator.kube_operator import LINE3, Cluster, eventually
from tests.operator.localmesh import names_on
from tests.router.routerproc import free_port

pytestmark = pytest.mark.timeout(240)


def test_operator_killed_mid_reconcile_converges_after_restart(
    crds: ControlPlane, mesh_factory: MeshFactory, tmp_path: Path
) -> None:
    """``qdmesh-operator`` as a process: SIGKILLed while it is applying 24 link routes, then
    started again; everything ends up applied exactly once and every resource Ready."""
    from kubernetes import client

    namespace = f"restart-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(crds.api_client()).create_namespace({"metadata": {"name": namespace}})
    kube = Cluster(crds, namespace)
    local = mesh_factory(LINE3)
    urls = {f"{namespace}/delta-{i}": local.routers[name].url for i, name in enumerate("ABC")}
    urls_file = tmp_path / "urls.json"
    urls_file.write_text(json.dumps(urls))
    kube.create("routermeshes", "RouterMesh", "delta", {"size": 3, "image": "qdmesh/router:0.1.0"})
    for i in range(12):
        kube.create(
            "linkroutes", "LinkRoute", f"lr{i}", {"meshRef": "delta", "prefix": f"p{i}.", "containerId": "c"}
        )
    env = {**crds.env(), "QDMESH_ROUTER_URLS": str(urls_file), "QDMESH_DRIFT_INTERVAL": "2"}

    def start() -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "qdmesh_operator.main",
                "-n",
                namespace,
                "--health-port",
                str(free_port()),
                "--metrics-port",
                "0",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "op.log", "ab"),
        )

    first = start()
    try:
        eventually(
            lambda: any(names_on(u, "linkRoute") for u in urls.values()), 60, "first link routes applied"
        )
    finally:
        first.kill()
        first.wait(10)
    # While it is down: one more resource and a change.
    kube.create(
        "linkroutes", "LinkRoute", "late", {"meshRef": "delta", "prefix": "late.", "containerId": "c"}
    )
    kube.patch_spec("linkroutes", "lr0", {"prefix": "changed."})
    second = start()
    try:
        expected = sorted(
            [f"qdmesh/linkRoute/lr{i}-{d}" for i in range(12) for d in ("in", "out")]
            + ["qdmesh/linkRoute/late-in", "qdmesh/linkRoute/late-out"]
        )
        eventually(
            lambda: all(names_on(u, "linkRoute") == expected for u in urls.values()),
            90,
            "every link route on every router, once",
        )
        for url in urls.values():
            from tests.operator.localmesh import rows_on

            rows = rows_on(url, "linkRoute")
            assert rows["qdmesh/linkRoute/lr0-in"]["prefix"] == "changed."
        eventually(
            lambda: all(
                kube.condition("linkroutes", n, "Ready").get("status") == "True"
                for n in ["late", *[f"lr{i}" for i in range(12)]]
            ),
            60,
            "all Ready",
        )
        assert kube.get("linkroutes", "lr0")["status"]["observedGeneration"] == 2
    finally:
        second.terminate()
        try:
            second.wait(20)
        except subprocess.TimeoutExpired:
            second.kill()
            second.wait(10)
