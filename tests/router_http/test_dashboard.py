"""The Grafana dashboard in docs/grafana asks only for series a real router (or, for its mesh
health row, the operator) serves, grouped by labels those series have."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Set

from tests.router.amqpclient import Net, msg, send_and_settle
from tests.router.routerproc import RouterFactory

from .scrape import get

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "qdmesh-mesh.json"
# Labels Prometheus adds from the scrape target (ServiceMonitor/PodMonitor), not the router.
TARGET_LABELS = {"namespace", "qdmesh_io_mesh", "pod", "job", "instance"}


def served(text: str) -> Dict[str, Set[str]]:
    """{series name: label names} of a /metrics page."""
    labels: Dict[str, Set[str]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.match(r"^([a-z_:]+)(?:\{(.*)\})? ", line)
        assert match, line
        names = set(re.findall(r'([a-z_]+)="', match.group(2) or ""))
        labels.setdefault(match.group(1), set()).update(names)
    return labels


def operator_gauges() -> str:
    """What the operator serves of a mesh (mesh_gauges.py), for the dashboard's health row."""
    from qdmesh_operator.canary import PairResult
    from qdmesh_operator.mesh_gauges import MeshGauges

    statuses = {
        ("routermeshes", "m"): {"routers": 1, "routerStatus": [{"name": "m-0", "ready": True, "peers": 0}],
                                "certificates": [{"secret": "m-tls", "notAfter": "2027-01-01T00:00:00Z"}]},
        ("linkroutes", "orders"): {"conditions": [{"type": "Reachable", "status": "True"}]},
    }
    gauges = MeshGauges()
    gauges.observe("ns", "m", statuses, {("m-0", "m-1"): PairResult(0.004)})
    return gauges.render()


def test_dashboard_queries_name_served_series_and_labels(router_factory: RouterFactory, net: Net) -> None:
    router = router_factory(extra_listeners={"http": {"http": "true"}})
    client = net.connect(router.url)
    client.receiver("dashboard")
    send_and_settle(net, client.sender("dashboard"), [msg("one")])
    status, text, _ = get(router.ports["http"], "/metrics")
    assert status == 200
    series = served(text)
    # Families without samples on an idle router (no routing messages, no auto-links yet).
    series.setdefault("qdmesh_routing_messages_received_total", {"router", "opcode"})
    series.setdefault("qdmesh_autolinks", {"router", "status"})
    series.setdefault("qdmesh_link_routes", {"router", "status"})
    for name, labels in served(operator_gauges()).items():
        series.setdefault(name, set()).update(labels)
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(queries) >= 20
    for expr in queries:
        names = [name for name in re.findall(r"\b(qdmesh_[a-z_]+)\b", expr) if name not in TARGET_LABELS]
        assert names, expr
        for name in names:
            assert name in series, f"{name} (in {expr!r}) is not served by the router"
            used = set(re.findall(r"\b([a-z_]+)=~?\"", expr)) | {
                label.strip() for group in re.findall(r"by \(([^)]*)\)", expr) for label in group.split(",")}
            missing = used - series[name] - TARGET_LABELS
            assert not missing, f"{expr!r} uses labels {missing} that {name} lacks"
