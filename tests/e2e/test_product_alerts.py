"""The chart's alert rules fire on the cluster: a REAL Prometheus (Debian's, on the machine)
scrapes the operator installed by the chart, with the chart's rule file, its ``for`` durations
cut to seconds.  A LinkRoute whose broker nobody runs fires ``QdmeshRouteUnreachable``, naming
the resource, and it clears when the LinkRoute goes."""

from __future__ import annotations

import json
import re
import shutil
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
from .mesh_fixtures import MESH, MeshState, Timing
from .product import create_resource, delete_resource, http_forward

RULES = Path(__file__).resolve().parents[2] / "charts" / "qdmesh" / "files" / "qdmesh-alerts.yaml"
METRICS_PORT = 9090  # the chart's operator.metricsPort


def _firing(web: str) -> List[Dict[str, str]]:
    with urllib.request.urlopen(f"{web}/api/v1/alerts", timeout=5) as reply:
        alerts = json.loads(reply.read())["data"]["alerts"]
    return [a["labels"] for a in alerts if a["state"] == "firing"]


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
