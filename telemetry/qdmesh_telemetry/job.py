"""The analysis job: snapshot rows in, Parquet tables, a CSV summary and an HTML report out."""

from __future__ import annotations

import csv
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .addresses import address_throughput
from .counters import router_snapshots
from .findings import Finding, Thresholds, all_findings
from .health import autolink_availability, connection_churn, router_summary, vhost_denials
from .links import backlog_trends, link_tables
from .load import load_snapshots
from .report_html import write_report

log = logging.getLogger("qdmesh_telemetry.analyse")
Row = Dict[str, Any]


@dataclass
class AnalysisOptions:
    inputs: List[str]
    output: Path
    fmt: str = "json"
    mesh: str | None = None
    bucket_seconds: float = 60.0
    thresholds: Thresholds = field(default_factory=Thresholds)
    series_addresses: int = 5


@dataclass
class AnalysisResult:
    output: Path
    total_rows: int
    malformed_rows: int
    malformed_samples: List[Any]
    tables: Dict[str, List[Row]]
    findings: List[Finding]
    seconds: float

    @property
    def report(self) -> Path:
        return self.output / "report.html"


# Tables read back into the driver for findings and the report (all small: one row per
# address, link, router... not per snapshot), except the series, which is cut to the top few.
SMALL_TABLES = ("address_totals", "link_utilisation", "traffic_matrix", "outcomes", "backlog_trends",
                "autolinks", "connection_churn", "vhost_denials", "routers")


def _rows(frame: DataFrame) -> List[Row]:
    return [r.asDict() for r in frame.collect()]


def _write(spark: SparkSession, frame: DataFrame, directory: Path) -> DataFrame:
    """Write a table as Parquet and return it read back (so each is computed once)."""
    started = time.monotonic()
    frame.write.mode("overwrite").parquet(str(directory))
    log.debug("table %s written in %.1f s", directory.name, time.monotonic() - started)
    # With the schema given, reading back needs no job to look at a file footer.
    return spark.read.schema(frame.schema).parquet(str(directory))


def run_analysis(spark: SparkSession, options: AnalysisOptions) -> AnalysisResult:
    started = time.monotonic()
    out = Path(options.output)
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    snapshots = load_snapshots(spark, options.inputs, options.fmt, options.mesh)
    if snapshots.malformed_count:
        log.warning("%d malformed snapshot rows skipped, e.g. %s", snapshots.malformed_count,
                    snapshots.malformed_samples[:3])
    rows = snapshots.rows
    snaps = router_snapshots(rows).persist()
    bucket = options.bucket_seconds

    links = link_tables(rows, snaps, bucket)
    series, totals = address_throughput(rows, snaps, links.increments, bucket)
    limits = options.thresholds
    frames: Dict[str, DataFrame] = {
        "address_throughput": series,
        "address_totals": totals,
        "link_utilisation": links.utilisation,
        "traffic_matrix": links.matrix,
        "router_load": links.router_load,
        "outcomes": links.outcomes,
        "backlog": links.backlog,
        "backlog_trends": backlog_trends(links.backlog),
        "autolinks": autolink_availability(rows),
        "connection_churn": connection_churn(rows, snaps),
        "vhost_denials": vhost_denials(rows, snaps),
    }
    written: Dict[str, DataFrame] = {}
    for name, frame in frames.items():
        written[name] = _write(spark, frame, tables_dir / name)
    written["routers"] = _write(spark, router_summary(rows, snaps, written["router_load"],
                                                     limits.router_capacity), tables_dir / "routers")
    collected = {name: _rows(written[name]) for name in SMALL_TABLES}
    mesh_peaks = {r["mesh"]: float(r["peak"] or 0.0) for r in _rows(
        written["router_load"].groupBy("mesh", "bucket").agg(F.sum("rate").alias("rate"))
        .groupBy("mesh").agg(F.max("rate").alias("peak")))}
    collected["series"] = _top_series(written["address_throughput"], collected["address_totals"],
                                      options.series_addresses)
    findings = all_findings(collected, mesh_peaks, snapshots.malformed_count, limits)
    spark.createDataFrame([f.as_row() for f in findings], "kind string, severity string, subject string, "
                          "message string, value double").write.mode("overwrite").parquet(
                              str(tables_dir / "findings"))
    links.increments.unpersist()
    snaps.unpersist()
    rows.unpersist()
    result = AnalysisResult(out, snapshots.total_rows, snapshots.malformed_count, snapshots.malformed_samples,
                            collected, findings, 0.0)
    write_summary_csv(out / "summary.csv", result)
    result.seconds = time.monotonic() - started
    write_report(out / "report.html", result, options)
    return result


def _top_series(series: DataFrame, totals: List[Row], count: int) -> List[Row]:
    """In-rate per bucket, summed over routers, of the busiest user addresses."""
    top = [r["address"] for r in sorted((r for r in totals if not r["internal"] and (r["in"] or 0) > 0),
                                        key=lambda r: -(r["in"] or 0))[:count]]
    if not top:
        return []
    return _rows(series.where(F.col("address").isin(top))
                 .groupBy("mesh", "address", "bucket")
                 .agg(F.sum("in_rate").alias("in_rate"), F.sum("out_rate").alias("out_rate"),
                      F.sum("through_rate").alias("through_rate"))
                 .orderBy("bucket"))


def write_summary_csv(path: Path, result: AnalysisResult) -> None:
    """One flat CSV: findings, then per-address and per-router figures."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["section", "subject", "metric", "value", "detail"])
        writer.writerow(["input", "rows", "total", result.total_rows, ""])
        writer.writerow(["input", "rows", "malformed", result.malformed_rows, ""])
        for f in result.findings:
            writer.writerow(["finding", f.subject, f.kind, f.value, f"{f.severity}: {f.message}"])
        for r in sorted(result.tables["address_totals"], key=lambda r: -(r["in"] or 0)):
            for metric in ("in", "out", "through", "peak_in_rate"):
                writer.writerow(["address", f"{r['mesh']}/{r['address']}", metric, r[metric], ""])
        for r in result.tables["routers"]:
            for metric in ("peak_rate", "mean_rate", "saturation", "peak_memory", "restarts"):
                writer.writerow(["router", f"{r['mesh']}/{r['router']}", metric, r.get(metric), ""])
        for r in result.tables["traffic_matrix"]:
            writer.writerow(["matrix", f"{r['mesh']}/{r['source']}->{r['target']}", "deliveries",
                             r["deliveries"], ""])
