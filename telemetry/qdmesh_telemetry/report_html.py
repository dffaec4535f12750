"""The HTML report: one self-contained page (inline SVG plots, tables), no JavaScript."""

from __future__ import annotations

import time
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Tuple

from .links import OUTCOMES
from .svg_plots import heat_map, line_chart, stacked_bars

if TYPE_CHECKING:
    from .job import AnalysisOptions, AnalysisResult

Row = Dict[str, Any]

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.critical { color: #b00; font-weight: bold; } .warning { color: #b60; } .info { color: #333; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 1.8em; }
"""


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f'<td class="n">{value:,.2f}</td>' if abs(value) < 100 else f'<td class="n">{value:,.0f}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
        return f'<td class="n">{value:,}</td>'
    return f"<td>{escape('' if value is None else str(value))}</td>"


def table(rows: Sequence[Row], columns: Sequence[str], limit: int = 25) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(r.get(c)) for c in columns) + "</tr>" for r in rows[:limit])
    more = f"<p>{len(rows) - limit} more rows in the Parquet table.</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def _throughput_plot(series: List[Row]) -> str:
    lines: Dict[str, List[Tuple[float, float]]] = {}
    for r in series:
        lines.setdefault(str(r["address"]), []).append((float(r["bucket"]), float(r["in_rate"] or 0.0)))
    return line_chart("throughput", lines, "deliveries in / s")


def _matrix_plot(matrix: List[Row], routers: List[Row]) -> str:
    names = sorted({str(r["router"]) for r in routers} | {str(r["source"]) for r in matrix}
                   | {str(r["target"]) for r in matrix})
    cells = {(str(r["source"]), str(r["target"])): float(r["deliveries"] or 0.0) for r in matrix}
    return heat_map("traffic-matrix", names if matrix else [], cells)


def _outcome_plot(outcomes: List[Row]) -> str:
    per_address: Dict[str, Dict[str, float]] = {}
    for r in outcomes:
        if r.get("internal") or r.get("direction") != "in":
            continue
        parts = per_address.setdefault(str(r["address"]), {})
        for outcome in OUTCOMES:
            parts[outcome] = parts.get(outcome, 0.0) + float(r.get(outcome) or 0.0)
    ranked = sorted(per_address.items(), key=lambda item: -sum(item[1].values()))[:15]
    return stacked_bars("outcomes", ranked)


def render(result: AnalysisResult, options: AnalysisOptions) -> str:
    t = result.tables
    meshes = sorted({str(r["mesh"]) for r in t["routers"]})
    first = min((r["first_ts"] for r in t["routers"] if r.get("first_ts")), default=None)
    last = max((r["last_ts"] for r in t["routers"] if r.get("last_ts")), default=None)
    span = (f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(first))} to "
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(last))} UTC"
            if first and last else "no snapshots")
    findings = "".join(f'<li class="{escape(f.severity)}">[{escape(f.severity)}] {escape(f.message)}</li>'
                       for f in result.findings) or "<li>nothing to report</li>"
    malformed = ""
    if result.malformed_rows:
        malformed = (f"<h2>Malformed rows</h2><p>{result.malformed_rows:,} rows skipped. Examples:</p>"
                     + table([{"reason": r, "row": text} for r, text in result.malformed_samples],
                             ["reason", "row"]))
    users = [r for r in t["address_totals"] if not r.get("internal")]
    sections = [
        f"<h1>Mesh telemetry: {escape(', '.join(meshes) or 'no data')}</h1>",
        f"<p>{span}; {len(t['routers'])} routers; {result.total_rows:,} snapshot rows "
        f"({result.malformed_rows:,} malformed); buckets of {options.bucket_seconds:g} s; "
        f"analysed in {result.seconds:.1f} s.</p>",
        f"<h2>Findings</h2><ul>{findings}</ul>",
        "<h2>Throughput over time (busiest addresses)</h2>", _throughput_plot(t["series"]),
        "<h2>Inter-router traffic matrix (deliveries)</h2>", _matrix_plot(t["traffic_matrix"], t["routers"]),
        "<h2>Outcomes per address (as the senders saw them)</h2>", _outcome_plot(t["outcomes"]),
        "<h2>Addresses</h2>",
        table(sorted(users, key=lambda r: -(r["in"] or 0)), ["mesh", "address", "in", "out", "through",
                                                           "peak_in_rate", "routers"]),
        "<h2>Routers</h2>",
        table(sorted(t["routers"], key=lambda r: str(r["router"])),
              ["mesh", "router", "peak_rate", "mean_rate", "saturation", "peak_memory", "restarts",
               "snapshots"]),
        "<h2>Busiest links</h2>",
        table(sorted(t["link_utilisation"], key=lambda r: -(r["deliveries"] or 0)),
              ["router", "link_name", "link_dir", "peer", "owning_addr", "deliveries", "rate", "peak_rate",
               "window_use", "zero_credit_share"], limit=15),
        "<h2>Backlogs</h2>",
        table(sorted([r for r in t["backlog_trends"] if not r.get("internal")],
                     key=lambda r: -(r["peak"] or 0)),
              ["router", "address", "first", "last", "peak", "slope"]),
        "<h2>Auto-links</h2>",
        table(t["autolinks"], ["router", "autolink", "address", "active_share", "failures", "drops",
                               "last_status", "last_error"]),
        "<h2>Connection churn</h2>",
        table(t["connection_churn"], ["mesh", "vhost", "user", "connections", "opened", "closed",
                                      "churn_per_hour"]),
        "<h2>Vhost admissions</h2>", table(t["vhost_denials"], ["mesh", "vhost", "approved", "denied"]),
        malformed,
    ]
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>qdmesh telemetry</title>"
            f"<style>{STYLE}</style></head><body>" + "\n".join(sections) + "</body></html>\n")


def write_report(path: Path, result: AnalysisResult, options: AnalysisOptions) -> None:
    temporary = path.with_name("." + path.name + ".tmp")
    temporary.write_text(render(result, options), encoding="utf-8")
    temporary.replace(path)
