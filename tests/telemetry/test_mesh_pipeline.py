"""The whole pipeline on a real mesh: routers -> collector -> Spark job, checked against the
traffic that was sent (see recording.py for what flowed where)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from qdmesh_telemetry.entities import ENTITY_TYPES
from qdmesh_telemetry.job import AnalysisResult
from tests.telemetry.recording import MATRIX, SENT, Recording

pytestmark = pytest.mark.timeout(900)


def snapshot_rows(directory: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for path in sorted(directory.rglob("*.jsonl")) for line in path.open()]


def test_collector_writes_every_router_and_entity_type_per_round(recording: Recording) -> None:
    files = list(recording.snapshots.rglob("*"))
    assert not [f for f in files if f.name.startswith(".")], "a temporary file was left behind"
    data = [f for f in files if f.is_file()]
    assert data and all(f.relative_to(recording.snapshots).parts[0] == "mesh=line3" for f in data)
    assert all(f.parent.name.startswith("hour=") and f.parent.parent.name.startswith("date=") for f in data)
    rows = snapshot_rows(recording.snapshots)
    assert {r["entity"] for r in rows} <= set(ENTITY_TYPES)
    for router in "ABC":
        mine = [r for r in rows if r["router"] == router]
        router_rows = [r for r in mine if r["entity"] == "router"]
        assert len(router_rows) == recording.rounds
        assert all(r["attributes"]["id"] == router for r in router_rows)
        # Every row of one snapshot carries that snapshot's time.
        assert {r["ts"] for r in mine} == {r["ts"] for r in router_rows}
        assert {"connection", "router.link", "router.address", "router.node"} <= {r["entity"] for r in mine}
    autolinks = [r for r in rows if r["entity"] == "router.config.autoLink"]
    assert {r["router"] for r in autolinks} == {"B"} and len(autolinks) == recording.rounds


def test_collector_discovers_the_mesh_from_one_router(recording: Recording) -> None:
    assert recording.discovered_routers == ["A", "B", "C"]
    rows = snapshot_rows(recording.discovered)
    assert {r["router"] for r in rows if r["entity"] == "router"} == {"A", "B", "C"}


def totals_by_address(result: AnalysisResult) -> Dict[str, Dict[str, Any]]:
    return {r["address"]: r for r in result.tables["address_totals"] if r["mesh"] == "line3"}


def test_address_totals_match_what_was_sent(analysis: AnalysisResult) -> None:
    totals = totals_by_address(analysis)
    for address, sent in SENT.items():
        assert totals[f"closest/{address}"]["in"] == sent, totals[f"closest/{address}"]
        assert totals[f"closest/{address}"]["out"] == sent, totals[f"closest/{address}"]
    # through counts forwards to another router: east and west take two hops, local none.
    assert totals["closest/tel.east"]["through"] == 2 * SENT["tel.east"]
    assert totals["closest/tel.west"]["through"] == 2 * SENT["tel.west"]
    assert totals["closest/tel.local"]["through"] == 0


def test_rates_are_deliveries_over_the_snapshot_interval(analysis: AnalysisResult,
                                                         recording: Recording) -> None:
    rows = snapshot_rows(recording.snapshots)
    times = sorted({r["ts"] for r in rows if r["router"] == "A"})
    series = [r for r in analysis.tables["series"] if r["address"] == "closest/tel.east"]
    # The second round of traffic sent 40 east deliveries in at A, the third 20 more, the fourth none.
    by_bucket = {r["bucket"]: r["in_rate"] for r in series}
    expected = {2: 40 / (times[1] - times[0]), 3: 20 / (times[2] - times[1])}
    for round_number, rate in expected.items():
        bucket = float(int(times[round_number - 1]))
        assert by_bucket[bucket] == pytest.approx(rate, rel=1e-6), (by_bucket, times)
    assert by_bucket[float(int(times[3]))] == 0


def test_traffic_matrix_matches_the_paths_messages_took(analysis: AnalysisResult) -> None:
    matrix = {(r["source"], r["target"]): r["deliveries"] for r in analysis.tables["traffic_matrix"]}
    assert matrix == {pair: float(n) for pair, n in MATRIX.items()}


def test_outcomes_per_address_as_senders_saw_them(analysis: AnalysisResult, recording: Recording) -> None:
    seen: Dict[str, Dict[str, float]] = {}
    for r in analysis.tables["outcomes"]:
        if r["direction"] == "in" and not r["internal"]:
            seen[f"{r['router']}:{r['address']}"] = {k: r[k] for k in ("accepted", "rejected", "released")}
    assert recording.outcomes["tel.local"] == {"accepted": 15, "rejected": 5}
    assert seen["B:closest/tel.local"] == {"accepted": 15, "rejected": 5, "released": 0}
    assert seen["A:closest/tel.east"] == {"accepted": 60, "rejected": 0, "released": 0}
    assert seen["C:closest/tel.west"] == {"accepted": 25, "rejected": 0, "released": 0}
    kinds = {(f.kind, f.subject) for f in analysis.findings}
    assert ("bad-outcomes", "line3/closest/tel.local") in kinds


def test_findings_name_the_hot_address_and_the_growing_backlog(analysis: AnalysisResult) -> None:
    hot = [f for f in analysis.findings if f.kind == "hot-address"]
    assert hot[0].subject == "line3/closest/tel.east", hot
    growing = {f.subject for f in analysis.findings if f.kind == "growing-backlog"}
    assert growing == {"line3/B/closest/tel.slow"}, growing
    trend = next(r for r in analysis.tables["backlog_trends"] if r["address"] == "closest/tel.slow")
    assert (trend["first"], trend["last"]) == (0, 20)
    hot_links = [f for f in analysis.findings if f.kind == "hot-link"]
    assert hot_links and all("$management" not in f.message for f in hot_links)


def test_autolink_that_never_attached_is_reported(analysis: AnalysisResult, recording: Recording) -> None:
    rows = [r for r in analysis.tables["autolinks"] if r["autolink"] == "tel-broker-in"]
    assert len(rows) == 1 and rows[0]["router"] == "B", rows
    assert rows[0]["active_share"] == 0 and rows[0]["snapshots"] == recording.rounds
    assert rows[0]["last_status"] != "active"
    assert any(f.kind == "unavailable-autolink" and "tel-broker-in" in f.message for f in analysis.findings)


def test_connection_churn_counts_the_client_that_came_and_went(analysis: AnalysisResult) -> None:
    churn = {(r["vhost"], r["user"]): r for r in analysis.tables["connection_churn"]}
    row = churn[("$default", "anonymous")]
    assert (row["opened"], row["closed"]) == (1, 1), row
    assert row["churn_per_hour"] > 0


def test_mesh_size_finding_and_outputs_on_disk(analysis: AnalysisResult) -> None:
    size = [f for f in analysis.findings if f.kind == "mesh-size"]
    assert [f.value for f in size] == [3.0] and size[0].severity == "info"
    out = analysis.output
    for table in ("address_throughput", "traffic_matrix", "outcomes", "autolinks", "findings", "routers"):
        assert list((out / "tables" / table).glob("*.parquet")), table
    summary = (out / "summary.csv").read_text()
    assert "matrix,line3/A->B,deliveries,60.0" in summary
    assert "address,line3/closest/tel.east,in,60.0" in summary
