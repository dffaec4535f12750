"""Findings a person can act on, from the (small) per-address, per-link and per-router tables."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Sequence

Row = Dict[str, Any]


@dataclass
class Thresholds:
    router_capacity: float = 5000.0     # deliveries/s one router handles (see docs/telemetry.md)
    saturation: float = 0.7             # peak share of capacity that counts as near saturation
    target_utilisation: float = 0.5     # share of capacity a suggested mesh size aims for
    flaps: int = 3                      # auto-link drops or failures that count as flapping
    backlog_min: float = 10.0           # messages: smaller backlogs are never "growing"
    backlog_slope: float = 0.1          # messages/s of growth that counts
    bad_outcome_share: float = 0.05     # released+rejected+modified share worth reporting
    top: int = 5


@dataclass
class Finding:
    kind: str
    severity: str    # info, warning, critical
    subject: str
    message: str
    value: float

    def as_row(self) -> Row:
        return asdict(self)


def _n(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) else number


def hottest_addresses(totals: Sequence[Row], top: int) -> List[Finding]:
    user = [r for r in totals if not r.get("internal") and _n(r.get("in")) > 0]
    everything = sum(_n(r.get("in")) for r in user) or 1.0
    ranked = sorted(user, key=lambda r: -_n(r.get("in")))[:top]
    return [Finding("hot-address", "info", f"{r['mesh']}/{r['address']}",
                    f"address {r['address']}: {_n(r['in']):,.0f} deliveries in "
                    f"({_n(r['in']) / everything:.0%} of all), peak {_n(r.get('peak_in_rate')):,.1f}/s",
                    _n(r["in"])) for r in ranked]


def hottest_links(links: Sequence[Row], top: int) -> List[Finding]:
    busy = [r for r in links if _n(r.get("deliveries")) > 0 and not r.get("internal")]
    ranked = sorted(busy, key=lambda r: (-_n(r.get("peak_rate")), -_n(r.get("deliveries"))))[:top]
    found = []
    for r in ranked:
        what = f"to router {r['peer']}" if r.get("peer") else f"for {r.get('owning_addr') or 'no address'}"
        found.append(Finding("hot-link", "info", f"{r['mesh']}/{r['router']}/{r['link']}",
                             f"router {r['router']} link {r.get('link_name') or r['link']} "
                             f"({r.get('link_dir')}, {what}):"
                             f" peak {_n(r.get('peak_rate')):,.1f}/s, {_n(r['deliveries']):,.0f} deliveries, "
                             f"window {_n(r.get('window_use')):.0%} used",
                             _n(r.get("peak_rate"))))
    return found


def growing_backlogs(trends: Sequence[Row], limits: Thresholds) -> List[Finding]:
    found = []
    for r in trends:
        if r.get("internal"):
            continue
        slope, first, last = _n(r.get("slope")), _n(r.get("first")), _n(r.get("last"))
        if slope >= limits.backlog_slope and last > first and last >= limits.backlog_min:
            found.append(Finding("growing-backlog", "warning", f"{r['mesh']}/{r['router']}/{r['address']}",
                                 f"address {r['address']} on router {r['router']}: backlog {first:,.0f} -> "
                                 f"{last:,.0f} messages, growing {slope:,.2f}/s; add consumers or credit",
                                 slope))
    return sorted(found, key=lambda f: -f.value)


def autolink_problems(autolinks: Sequence[Row], limits: Thresholds) -> List[Finding]:
    found = []
    for r in autolinks:
        drops, failures = _n(r.get("drops")), _n(r.get("failures"))
        subject = f"{r['mesh']}/{r['router']}/{r['autolink']}"
        error = f"; last error: {r['last_error']}" if r.get("last_error") else ""
        share = _n(r.get("active_share"))
        if drops >= limits.flaps or failures >= limits.flaps:
            found.append(Finding("flapping-autolink", "warning", subject,
                                 f"auto-link {r['autolink']} ({r.get('address')}) on router {r['router']}: "
                                 f"{drops:.0f} drops, {failures:.0f} failures, "
                                 f"active {share:.0%} of the time{error}",
                                 drops + failures))
        elif share < 0.5:
            found.append(Finding("unavailable-autolink", "warning", subject,
                                 f"auto-link {r['autolink']} ({r.get('address')}) on router {r['router']}: "
                                 "active "
                                 f"{share:.0%} of the time, now {r.get('last_status')}{error}", 1 - share))
    return found


def bad_outcomes(outcomes: Sequence[Row], limits: Thresholds) -> List[Finding]:
    """Producer side (links into the router): the outcome each sender finally saw."""
    totals: Dict[str, Row] = {}
    for r in outcomes:
        if r.get("internal") or r.get("direction") != "in":
            continue
        key = f"{r['mesh']}/{r['address']}"
        agg = totals.setdefault(key, {"address": r["address"], "deliveries": 0.0, "bad": 0.0})
        agg["deliveries"] += _n(r.get("deliveries"))
        agg["bad"] += sum(_n(r.get(o)) for o in ("released", "rejected", "modified"))
    found = []
    for key, agg in totals.items():
        if agg["deliveries"] >= 10 and agg["bad"] / agg["deliveries"] >= limits.bad_outcome_share:
            share = agg["bad"] / agg["deliveries"]
            found.append(Finding("bad-outcomes", "warning", key,
                                 f"address {agg['address']}: {share:.0%} of "
                                 f"{agg['deliveries']:,.0f} deliveries "
                                 "released, rejected or modified", share))
    return found


def saturation(routers: Sequence[Row], mesh_peaks: Dict[str, float], limits: Thresholds) -> List[Finding]:
    found = []
    for r in routers:
        used = _n(r.get("saturation"))
        if used >= limits.saturation:
            found.append(Finding("near-saturation", "critical" if used >= 1 else "warning",
                                 f"{r['mesh']}/{r['router']}",
                                 f"router {r['router']}: peak {_n(r.get('peak_rate')):,.0f} deliveries/s, "
                                 f"{used:.0%} of its capacity ({limits.router_capacity:,.0f}/s)", used))
    for mesh in sorted({str(r["mesh"]) for r in routers}):
        size = sum(1 for r in routers if r["mesh"] == mesh)
        peak = mesh_peaks.get(mesh, 0.0)
        wanted = max(size, math.ceil(peak / (limits.router_capacity * limits.target_utilisation)))
        severity = "warning" if wanted > size else "info"
        found.append(Finding("mesh-size", severity, mesh,
                             f"mesh {mesh}: peak {peak:,.0f} deliveries/s over {size} routers; "
                             f"suggested size "
                             f"{wanted} (at {limits.target_utilisation:.0%} of "
                             f"{limits.router_capacity:,.0f}/s each)",
                             float(wanted)))
    return found


def restarts(routers: Sequence[Row]) -> List[Finding]:
    return [Finding("router-restarts", "warning", f"{r['mesh']}/{r['router']}",
                    f"router {r['router']} restarted {_n(r['restarts']):.0f} times while watched",
                    _n(r["restarts"])) for r in routers if _n(r.get("restarts")) > 0]


def all_findings(tables: Dict[str, List[Row]], mesh_peaks: Dict[str, float], malformed: int,
                 limits: Thresholds) -> List[Finding]:
    found: List[Finding] = []
    if malformed:
        found.append(Finding("malformed-rows", "warning", "input",
                             f"{malformed:,} malformed snapshot rows skipped (see the report)",
                             float(malformed)))
    found += saturation(tables["routers"], mesh_peaks, limits)
    found += restarts(tables["routers"])
    found += growing_backlogs(tables["backlog_trends"], limits)
    found += autolink_problems(tables["autolinks"], limits)
    found += bad_outcomes(tables["outcomes"], limits)
    found += hottest_addresses(tables["address_totals"], limits.top)
    found += hottest_links(tables["link_utilisation"], limits.top)
    return found
