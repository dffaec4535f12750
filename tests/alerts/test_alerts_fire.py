"""The chart's alert rules firing on what a real operator reports: ``qdmesh-operator`` as a
process against a REAL API server, one RouterMesh backed by a real local router whose link
route points at a broker nobody runs, and a REAL Prometheus (Debian's) scraping the
operator's /metrics with the chart's rule file, its ``for`` durations cut to seconds so the
test does not wait minutes.  The alert that says so fires with the resource's labels; one
whose condition does not hold (a certificate near its end: the mesh's are new) does not.
(Which router alerts fire besides depends on the StatefulSet's pod, which no kubelet runs
here: a rolled pod leaves the router that answered counted as lost.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
import yaml

from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import Cluster, eventually
from tests.prerequisites import require
from tests.reaper import stop_process
from tests.router.routerproc import free_port

pytestmark = pytest.mark.timeout(300)

RULES = Path(__file__).resolve().parents[2] / "charts" / "qdmesh" / "files" / "qdmesh-alerts.yaml"


def firing(prometheus: int) -> List[Dict[str, Any]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{prometheus}/api/v1/alerts", timeout=5) as reply:
        alerts = json.loads(reply.read())["data"]["alerts"]
    return [a["labels"] for a in alerts if a["state"] == "firing"]


def _metric(port: int, family: str) -> List[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return [line for line in reply.read().decode().splitlines() if line.startswith(family + "{")]


def start(cmd: List[str], log: Path, env: Dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))


def test_an_unreachable_link_route_fires_its_alert(crds: ControlPlane, router_factory: Callable[..., Any],
                                                   tmp_path: Path) -> None:
    binary = shutil.which("prometheus")
    require(binary is not None, "prometheus (Debian's prometheus)")
    from kubernetes import client

    namespace = f"alerts-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(crds.api_client()).create_namespace({"metadata": {"name": namespace}})
    kube = Cluster(crds, namespace)
    router = router_factory(router_id="watched-0")
    urls_file = tmp_path / "urls.json"
    urls_file.write_text(json.dumps({f"{namespace}/watched-0": router.url}))
    kube.create("routermeshes", "RouterMesh", "watched", {
        "size": 1, "image": "qdmesh/router:0.1.0",
        "connectors": [{"name": "broker", "host": "127.0.0.1", "port": free_port()}]})
    kube.create("linkroutes", "LinkRoute", "orders", {"meshRef": "watched", "prefix": "orders.",
                                                      "connection": "broker"})
    metrics, health, web = free_port(), free_port(), free_port()
    env = {**crds.env(), "QDMESH_ROUTER_URLS": str(urls_file), "QDMESH_DRIFT_INTERVAL": "1"}
    operator = start([sys.executable, "-m", "qdmesh_operator.main", "-n", namespace, "--health-port",
                      str(health), "--metrics-port", str(metrics), "--log-level", "warning"],
                     tmp_path / "operator.log", env)
    # The chart's rules, their durations cut to seconds: what fires and with which labels is
    # theirs, only the waiting is shorter.
    rules = re.sub(r"(?m)^(\s+for:) \S+$", r"\1 2s", RULES.read_text())
    (tmp_path / "rules.yaml").write_text(rules)
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yaml")],
        "scrape_configs": [{"job_name": "qdmesh-operator", "honor_labels": True,
                            "static_configs": [{"targets": [f"127.0.0.1:{metrics}"]}]}]}))
    prometheus = start([str(binary), f"--config.file={tmp_path / 'prometheus.yml'}",
                        f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{web}"],
                       tmp_path / "prometheus.log")
    try:
        def unreachable_fires() -> Any:
            assert operator.poll() is None, (tmp_path / "operator.log").read_text()[-3000:]
            assert prometheus.poll() is None, (tmp_path / "prometheus.log").read_text()[-3000:]
            found = [a for a in firing(web) if a["alertname"] == "QdmeshRouteUnreachable"]
            return found or None

        [alert] = eventually(unreachable_fires, 180, "QdmeshRouteUnreachable firing")
        assert {k: alert[k] for k in ("namespace", "mesh", "kind", "name", "severity")} == {
            "namespace": namespace, "mesh": "watched", "kind": "LinkRoute", "name": "orders",
            "severity": "warning"}
        # The gauge is there (the managed CA and certificate), the alert is not.
        expiry = _metric(metrics, "qdmesh_certificate_expiry_timestamp_seconds")
        assert any('secret="watched-inter-router-ca"' in line for line in expiry), expiry
        names = {a["alertname"] for a in firing(web)}
        assert "QdmeshCertificateExpiresSoon" not in names, names
    finally:
        stop_process(prometheus)
        stop_process(operator)
