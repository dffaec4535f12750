"""The chart's alert rules fire on the cluster: a REAL Prometheus (Debian's, on the machine)
scrapes the operator installed by the chart, with the chart's rule file, its ``for`` durations
cut to seconds.  A LinkRoute whose broker nobody runs fires ``QdmeshRouteUnreachable``, naming
the resource, and it clears when the LinkRoute goes.  A router that stops answering (its
process frozen with SIGSTOP, as a hung router would be) fires ``QdmeshRoutersLost`` before
Kubernetes' liveness probe restarts it (a minute), and it clears when the router answers again.

The frozen router needs the local cluster, whose pods are processes of this machine (not kind,
whose nodes are containers)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
import yaml

from tests.prerequisites import require
from tests.reaper import stop_process

from .kube import eventually
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole
from .product import create_resource, delete_resource, http_forward, read_resource, status_summary

RULES = Path(__file__).resolve().parents[2] / "charts" / "qdmesh" / "files" / "qdmesh-alerts.yaml"
METRICS_PORT = 9090  # the chart's operator.metricsPort


def _firing(web: str) -> List[Dict[str, str]]:
    with urllib.request.urlopen(f"{web}/api/v1/alerts", timeout=5) as reply:
        alerts = json.loads(reply.read())["data"]["alerts"]
    return [a["labels"] for a in alerts if a["state"] == "firing"]


def _router_pids(namespace: str, pod: str) -> List[int]:
    """The processes of ``pod``'s router, found by the environment its container gives them."""
    wanted = {f"POD_NAME={pod}".encode(), f"POD_NAMESPACE={namespace}".encode()}
    found: List[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted <= set((entry / "environ").read_bytes().split(b"\0")):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _ready(web: str, proc: subprocess.Popen) -> bool:
    assert proc.poll() is None, "Prometheus exited"
    try:
        with urllib.request.urlopen(f"{web}/-/ready", timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:  # not listening yet
        return False


def _first(find: Callable[[], List[Dict[str, str]]], timeout: float, what: str,
           describe: Callable[[], str] | None = None) -> Dict[str, str]:
    """The first alert ``find`` returns, waiting up to ``timeout`` s for one."""
    found: List[Dict[str, str]] = []

    def seen() -> bool:
        found[:] = find()
        return bool(found)

    eventually(seen, timeout, what, describe=describe)
    return found[0]


@pytest.fixture
def prometheus(operator_namespace: str, e2e_kubeconfig: Path, tmp_path: Path) -> Iterator[str]:
    """Prometheus scraping the operator through a port-forward; yields its base URL."""
    binary = shutil.which("prometheus")
    require(binary is not None, "prometheus (Debian's prometheus, .ci/setup.d/32-promtool.sh)")
    assert binary is not None
    rules = re.sub(r"(?m)^(\s+for:) \S+$", r"\1 2s", RULES.read_text())
    (tmp_path / "rules.yaml").write_text(rules)
    with http_forward(e2e_kubeconfig, operator_namespace, "deploy/qdmesh", METRICS_PORT) as metrics:
        target = urllib.parse.urlparse(metrics).netloc
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(tmp_path / "rules.yaml")],
            "scrape_configs": [{"job_name": "qdmesh-operator", "honor_labels": True,
                                "static_configs": [{"targets": [target]}]}]}))
        from tests.router.routerproc import free_port

        port = free_port()
        log = open(tmp_path / "prometheus.log", "wb")
        proc = subprocess.Popen([binary, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=log)
        web = f"http://127.0.0.1:{port}"
        try:
            eventually(lambda: _ready(web, proc), 60, "Prometheus ready",
                       describe=lambda: (tmp_path / "prometheus.log").read_text()[-2000:])
            yield web
        finally:
            stop_process(proc)
            log.close()


def test_an_unreachable_link_route_fires_its_alert(
        mesh: MeshState, k8s: Any, prometheus: str, timing: Timing) -> None:
    mesh.require_ready()
    ns = mesh.namespace
    started = time.monotonic()
    create_resource(k8s, ns, "linkroutes", "LinkRoute", "alerted", {
        "meshRef": MESH, "prefix": "alerted.", "containerId": "no-such-broker"})
    try:
        def unreachable() -> Any:
            return [a for a in _firing(prometheus) if a["alertname"] == "QdmeshRouteUnreachable"
                    and a.get("name") == "alerted"]

        alert = _first(unreachable, 240, "QdmeshRouteUnreachable firing for LinkRoute alerted")
        assert {k: alert.get(k) for k in ("namespace", "mesh", "kind", "severity")} == {
            "namespace": ns, "mesh": MESH, "kind": "LinkRoute", "severity": "warning"}, alert
        timing("LinkRoute to a missing broker -> QdmeshRouteUnreachable firing", time.monotonic() - started)
    finally:
        delete_resource(k8s, ns, "linkroutes", "alerted")
    eventually(lambda: not unreachable(), 240, "QdmeshRouteUnreachable resolved once the LinkRoute went")


def test_a_frozen_router_fires_routers_lost(
        mesh: MeshState, k8s: Any, prometheus: str, timing: Timing) -> None:
    mesh.require_ready()
    ns = mesh.namespace
    victim = mesh.routers[-1]
    pids = _router_pids(ns, victim)
    require(bool(pids), f"the process of router pod {victim} on this machine (the local cluster)")

    def lost() -> Any:
        return [a for a in _firing(prometheus) if a["alertname"] == "QdmeshRoutersLost"
                and a.get("mesh") == MESH and a.get("namespace") == ns]

    started = time.monotonic()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        # Its readiness probe fails after 6 s; the liveness probe would restart it after 60 s.
        alert = _first(lost, 45, f"QdmeshRoutersLost firing for router {victim} frozen",
                       describe=lambda: status_summary(read_resource(k8s, ns, "routermeshes", MESH)))
        assert alert.get("severity") == "critical", alert
        timing("router frozen -> QdmeshRoutersLost firing", time.monotonic() - started)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:  # restarted meanwhile
                pass
    eventually(lambda: mesh_whole(k8s, ns, mesh.size), 240, "the mesh whole again once the router answers",
               describe=lambda: status_summary(read_resource(k8s, ns, "routermeshes", MESH)))
    eventually(lambda: not lost(), 240, "QdmeshRoutersLost resolved")
