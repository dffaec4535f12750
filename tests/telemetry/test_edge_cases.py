"""The analysis on small hand-built inputs: counter resets, gaps, routers joining and leaving,
flapping auto-links, malformed rows, and no input at all (see handmade.py for the figures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

from qdmesh_telemetry.job import AnalysisOptions, AnalysisResult, run_analysis
from tests.telemetry.handmade import EXPECTED, MALFORMED, T0, write_edge_cases

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def edge(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AnalysisResult:
    inputs = write_edge_cases(tmp_path_factory.mktemp("edge-input"))
    output = tmp_path_factory.mktemp("edge-output")
    return run_analysis(spark, AnalysisOptions([str(inputs)], output, bucket_seconds=10.0))


def address_in(result: AnalysisResult, mesh: str, address: str) -> float:
    rows = [r for r in result.tables["address_totals"] if (r["mesh"], r["address"]) == (mesh, address)]
    assert len(rows) == 1, result.tables["address_totals"]
    return float(rows[0]["in"])


@pytest.mark.parametrize("mesh,address", sorted(EXPECTED))
def test_totals_are_exact_across_resets_gaps_joins_and_leaves(edge: AnalysisResult, mesh: str,
                                                              address: str) -> None:
    assert address_in(edge, mesh, address) == EXPECTED[(mesh, address)]


def test_a_restart_is_seen_by_the_router_and_counted_once(edge: AnalysisResult) -> None:
    routers = {(r["mesh"], r["router"]): r for r in edge.tables["routers"]}
    assert routers[("resets", "R1")]["restarts"] == 1
    assert routers[("gaps", "G1")]["restarts"] == 0
    assert any(f.kind == "router-restarts" and f.subject == "resets/R1" for f in edge.findings)


def throughput_rows(spark: Any, result: AnalysisResult, mesh: str) -> List[Dict[str, Any]]:
    table = spark.read.parquet(str(result.output / "tables" / "address_throughput"))
    return [r.asDict() for r in table.where(table.mesh == mesh).collect()]


def test_a_gap_is_one_long_interval_not_a_spike(spark: Any, edge: AnalysisResult) -> None:
    rates = {r["bucket"] - T0: r["in_rate"] for r in throughput_rows(spark, edge, "gaps")
             if r["address"] == "feed"}
    # One delivery a second all along: the 60 s gap averages to 1/s as well.
    assert rates == {10.0: 1.0, 20.0: 1.0, 80.0: 1.0, 90.0: 1.0}


def test_routers_that_join_or_leave_keep_their_own_figures(spark: Any, edge: AnalysisResult) -> None:
    routers = {r["router"]: r for r in edge.tables["routers"] if r["mesh"] == "joins"}
    assert sorted(routers) == ["J1", "J2", "J3"]
    assert (routers["J2"]["snapshots"], routers["J3"]["snapshots"]) == (3, 3)
    per_router = {r["router"]: 0.0 for r in throughput_rows(spark, edge, "joins")}
    for r in throughput_rows(spark, edge, "joins"):
        per_router[r["router"]] += r["in"]
    assert per_router == {"J1": 10.0, "J2": 9.0, "J3": 30.0}


def test_flapping_autolink_found_with_its_last_error(edge: AnalysisResult) -> None:
    links = {r["autolink"]: r for r in edge.tables["autolinks"] if r["mesh"] == "flaps"}
    flapping = links["orders-out"]
    assert (flapping["drops"], flapping["failures"]) == (3, 3)
    assert flapping["active_share"] == pytest.approx(4 / 7)
    assert flapping["last_error"] == "amqp:not-found: no queue" and flapping["last_status"] == "active"
    assert links["steady-out"]["active_share"] == 1.0 and links["steady-out"]["drops"] == 0
    flagged = [f for f in edge.findings if f.kind == "flapping-autolink"]
    assert [f.subject for f in flagged] == ["flaps/F1/orders-out"]
    assert "amqp:not-found" in flagged[0].message


def test_malformed_rows_are_reported_and_skipped(edge: AnalysisResult) -> None:
    # The half-written dot-file is never read; the five bad lines are counted and shown.
    assert edge.malformed_rows == MALFORMED
    reasons = sorted(reason for reason, _ in edge.malformed_samples)
    assert "missing router" in reasons and "deliveryCount is not a number" in reasons
    assert sum(r.startswith("not a snapshot row") for r in reasons) == 3
    report = edge.report.read_text()
    assert "5 rows skipped" in report and "this is not json" in report
    assert any(f.kind == "malformed-rows" for f in edge.findings)


def test_empty_input_gives_empty_tables_and_a_report(spark: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_analysis(spark, AnalysisOptions([str(empty)], tmp_path / "out"))
    assert result.total_rows == 0 and result.malformed_rows == 0
    assert all(rows == [] for rows in result.tables.values()), result.tables
    assert result.findings == []
    assert "no data" in result.report.read_text()
    assert (tmp_path / "out" / "summary.csv").read_text().startswith("section,subject,metric,value,detail")
