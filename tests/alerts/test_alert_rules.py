"""The chart's alert rules (charts/qdmesh/files/qdmesh-alerts.yaml) as Prometheus reads them:
``promtool check rules`` accepts them, and ``promtool test rules`` runs a unit test of each
alert (qdmesh-alerts.test.yaml): quiet while the mesh is fine or not yet for long enough,
firing with its labels, words and runbook link.  Every alert has its test and its runbook."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.prerequisites import require

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "charts" / "qdmesh" / "files" / "qdmesh-alerts.yaml"
TESTS = Path(__file__).with_name("qdmesh-alerts.test.yaml")
RUNBOOKS = REPO / "docs" / "runbooks.md"


def promtool(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("promtool")
    require(tool is not None, "promtool (Debian's prometheus)")
    assert tool is not None
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)


def alerts() -> list:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def test_prometheus_accepts_the_rules() -> None:
    done = promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in done.stdout


def test_each_alert_fires_when_it_should_and_not_before() -> None:
    done = promtool("test", "rules", str(TESTS))
    assert done.returncode == 0, done.stdout + done.stderr
    tested = set(re.findall(r"alertname: (\w+)", TESTS.read_text()))
    assert tested == {rule["alert"] for rule in alerts()}, "an alert without a unit test"


def test_each_alert_links_to_its_runbook_section() -> None:
    headings = {re.sub(r"[^a-z0-9 -]", "", line[3:].strip().lower()).replace(" ", "-")
                for line in RUNBOOKS.read_text().splitlines() if line.startswith("## ")}
    for rule in alerts():
        link = rule["annotations"]["runbook_url"]
        assert link.startswith("RUNBOOKS#"), rule["alert"]
        assert link.split("#", 1)[1] in headings, f"{rule['alert']}: no section {link} in docs/runbooks.md"


def test_every_dashboard_query_is_promql_prometheus_parses(tmp_path: Path) -> None:
    """docs/grafana's queries, Grafana's variables filled in, as recording rules for promtool."""
    dashboard = json.loads((REPO / "docs" / "grafana" / "qdmesh-mesh.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    filled = [e.replace("$__rate_interval", "5m").replace("$namespace", ".*").replace("$mesh", ".*")
              for e in exprs]
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:query{i}", "expr": e}
                                                          for i, e in enumerate(filled)]}]}
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    done = promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in done.stdout
