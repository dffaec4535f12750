"""Summaries of repeated measurements and their Markdown report.

Standard library only (Python 3.9+).
"""

from __future__ import annotations

import os
import platform
import statistics
from typing import Any, Dict, List, Sequence

from scenarios import Measurement, Scenario


def machine_info() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs ({cpu})"


def fmt_rate(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def fmt_us(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def progress_line(tag: str, m: Measurement, direct: Measurement | None = None) -> str:
    """One run, as the progress output shows it: its rate (and share of ``direct``), latency,
    losses (through a router), and the CPU of the clients and of the process between them."""
    text = f"{tag} {m.kind}: {m.msgs_per_sec:,.0f} msgs/s"
    if direct is not None:
        share = m.msgs_per_sec / direct.msgs_per_sec if direct.msgs_per_sec else 0.0
        text += f" ({share:.1%} of direct)"
    text += f", p50 {fmt_us(m.p50_us)} µs, p99 {fmt_us(m.p99_us)} µs"
    if m.kind in ("router", "forward"):
        text += f", lost {m.lost}"
    text += f"; CPU sender {m.sender_cpu_pct:.0f}%, receiver {m.receiver_cpu_pct:.0f}%"
    if m.router_cpu_pct is not None and m.router_cpu_us_per_msg is not None:
        text += f", {m.kind} {m.router_cpu_pct:.0f}% ({m.router_cpu_us_per_msg:.2f} µs/msg)"
    return text


def fmt_ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def fmt_router_cpu(summary: Dict[str, Any], middle: str = "router") -> str:
    """The router's (or a ceiling's) busy share of one core, and its CPU per message (medians)."""
    pct, per_msg = summary.get(f"{middle}_cpu_pct"), summary.get(f"{middle}_cpu_us_per_msg")
    if pct is None or per_msg is None:
        return "-"
    return f"{pct:.0f}% ({per_msg:.2f})"


def median_or_none(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def pair_ratios(numerators: Sequence[Measurement], denominators: Sequence[Measurement]) -> List[float]:
    """msgs/s ratios of measurements taken back to back in the same repeat."""
    return [n.msgs_per_sec / d.msgs_per_sec for n, d in zip(numerators, denominators) if d.msgs_per_sec]


# The processes that can stand between the clients instead of the router, each measured as
# a ceiling for it (bench/README.md): a byte relay (--relay) and the C forwarder (--forward).
CEILINGS = ("relay", "forward")


def scenario_summary(
    sc: Scenario,
    direct: List[Measurement],
    routed: List[Measurement],
    relayed: Sequence[Measurement] = (),
    forwarded: Sequence[Measurement] = (),
) -> Dict[str, Any]:
    summary: Dict[str, Any] = {
        "scenario": sc.name,
        "title": sc.title,
        "direct_msgs_per_sec": median_or_none([m.msgs_per_sec for m in direct]),
        "direct_p50_us": median_or_none([m.p50_us for m in direct]),
        "direct_p99_us": median_or_none([m.p99_us for m in direct]),
        "router_msgs_per_sec": median_or_none([m.msgs_per_sec for m in routed]),
        "router_deliveries_per_sec": median_or_none([m.deliveries_per_sec for m in routed]),
        "direct_sender_cpu_pct": median_or_none([m.sender_cpu_pct for m in direct]),
        "router_sender_cpu_pct": median_or_none([m.sender_cpu_pct for m in routed]),
        "router_receiver_cpu_pct": median_or_none([m.receiver_cpu_pct for m in routed]),
        "router_cpu_pct": median_or_none([m.router_cpu_pct for m in routed]),
        "router_cpu_us_per_msg": median_or_none([m.router_cpu_us_per_msg for m in routed]),
        "router_p50_us": median_or_none([m.p50_us for m in routed]),
        "router_p99_us": median_or_none([m.p99_us for m in routed]),
        # Median of per-repeat ratios: each pair was measured back to back.
        "ratio": median_or_none(pair_ratios(routed, direct)),
        "router_lost": max((m.lost for m in routed), default=None),
        "router_not_accepted": max(
            (m.messages - m.outcomes["accepted"] for m in routed if not sc.presettled), default=None
        ),
        "repeats": len(direct),
    }
    # With --relay or --forward: that process's rate as a share of direct, the router's as a
    # share of it, and its own CPU.
    for name, runs in zip(CEILINGS, (relayed, forwarded)):
        summary[f"{name}_msgs_per_sec"] = median_or_none([m.msgs_per_sec for m in runs])
        summary[f"{name}_ratio"] = median_or_none(pair_ratios(runs, direct))
        summary[f"router_to_{name}"] = median_or_none(pair_ratios(routed, runs))
        summary[f"{name}_p50_us"] = median_or_none([m.p50_us for m in runs])
        summary[f"{name}_cpu_pct"] = median_or_none([m.router_cpu_pct for m in runs])
        summary[f"{name}_cpu_us_per_msg"] = median_or_none([m.router_cpu_us_per_msg for m in runs])
    return summary


def markdown_table(
    summaries: List[Dict[str, Any]], direct_only: bool, relay: bool = False, forward: bool = False
) -> str:
    # Each ceiling measured adds its columns after direct's (and, with a router, after the
    # router's ratio): router/ceiling (with a router), ceiling/direct, the ceiling's CPU.
    ceilings = [name for name, on in zip(CEILINGS, (relay, forward)) if on]
    head = "".join(f" {c}/direct | {c} CPU (µs/msg) |" for c in ceilings)
    rule = "---:|---:|" * len(ceilings)

    def ceiling_cells(s: Dict[str, Any]) -> str:
        return "".join(f" {fmt_ratio(s[f'{c}_ratio'])} | {fmt_router_cpu(s, c)} |" for c in ceilings)

    if direct_only:
        lines = [
            "| scenario | direct msgs/s | direct p50 µs | direct p99 µs |" + head,
            "|---|---:|---:|---:|" + rule,
        ]
        for s in summaries:
            lines.append(
                f"| {s['title']} | {fmt_rate(s['direct_msgs_per_sec'])} | "
                f"{fmt_us(s['direct_p50_us'])} | {fmt_us(s['direct_p99_us'])} |" + ceiling_cells(s)
            )
        return "\n".join(lines)
    lines = [
        "| scenario | direct msgs/s | router msgs/s | router/direct |"
        + "".join(f" router/{c} |" for c in ceilings)
        + head
        + " router CPU (µs/msg) | router p50 µs | router p99 µs | direct p50 µs | direct p99 µs | lost |",
        "|---|---:|---:|---:|" + "---:|" * len(ceilings) + rule + "---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lost = s["router_lost"]
        to_ceilings = "".join(f" {fmt_ratio(s[f'router_to_{c}'])} |" for c in ceilings)
        lines.append(
            f"| {s['title']} | {fmt_rate(s['direct_msgs_per_sec'])} | {fmt_rate(s['router_msgs_per_sec'])} "
            f"| {fmt_ratio(s['ratio'])} |{to_ceilings}{ceiling_cells(s)} {fmt_router_cpu(s)} "
            f"| {fmt_us(s['router_p50_us'])} "
            f"| {fmt_us(s['router_p99_us'])} | {fmt_us(s['direct_p50_us'])} | {fmt_us(s['direct_p99_us'])} "
            f"| {'-' if lost is None else lost} |"
        )
    return "\n".join(lines)
