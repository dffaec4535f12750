"""bench/soak.py's report: the RSS plot (an SVG drawn here, no plotting library) and the
Markdown table."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List


def write_svg(path: Path, samples: List[Dict[str, Any]], warmup: float, duration: float) -> None:
    rows = [s for s in samples if "rss_kb" in s]
    if not rows:
        return
    width, height, left, bottom = 760, 360, 60, 40
    top_mb = max(s["rss_kb"] for s in rows) / 1024 * 1.1
    tmax = max(duration, max(s["t"] for s in rows))

    def xy(t: float, kb: float) -> str:
        x = left + (width - left - 20) * t / tmax
        y = height - bottom - (height - bottom - 20) * (kb / 1024) / top_mb
        return f"{x:.1f},{y:.1f}"

    colours = {"A": "#1f77b4", "B": "#2ca02c", "C": "#d62728", "R": "#1f77b4"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    for i in range(6):
        mb = top_mb * i / 5
        y = xy(0, mb * 1024).split(",")[1]
        parts.append(f'<line x1="{left}" x2="{width - 20}" y1="{y}" y2="{y}" stroke="#ddd"/>'
                     f'<text x="{left - 6}" y="{y}" text-anchor="end">{mb:.0f}</text>')
    wx = xy(warmup, 0).split(",")[0]
    parts.append(f'<line x1="{wx}" x2="{wx}" y1="20" y2="{height - bottom}" stroke="#999" '
                 f'stroke-dasharray="4"/>'
                 f'<text x="{wx}" y="16" text-anchor="middle">warm-up ends</text>')
    for name in sorted({s["router"] for s in rows}):
        mine = [s for s in rows if s["router"] == name]
        # A restarted router (new pid) starts a new line.
        for pid in dict.fromkeys(s["pid"] for s in mine):
            points = " ".join(xy(s["t"], s["rss_kb"]) for s in mine if s["pid"] == pid)
            parts.append(f'<polyline fill="none" stroke="{colours.get(name, "#555")}" stroke-width="1.5" '
                         f'points="{points}"/>')
        last = mine[-1]
        parts.append(f'<text x="{width - 18}" y="{xy(0, last["rss_kb"]).split(",")[1]}" '
                     f'fill="{colours.get(name, "#555")}">{name}</text>')
    parts.append(f'<text x="{(width + left) / 2}" y="{height - 8}" text-anchor="middle">seconds</text>'
                 f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" '
                 f'text-anchor="middle">RSS (MB)</text></svg>')
    path.write_text("\n".join(parts) + "\n")


def markdown(result: Dict[str, Any]) -> str:
    t = result["totals"]
    lines = [f"Soak: {result['topology']}, {result['duration_s']:.0f} s "
             f"(warm-up {result['warmup_s']:.0f} s), "
             f"router `{result['router_cmd']}`", "",
             "| router | RSS after warm-up (MB) | at end (MB) | growth (MB) | per 100k connections | "
             "per 100k links | per 100k mgmt requests | Python objects at end |",
             "|---|---|---|---|---|---|---|---|"]
    for name, g in result["growth"].items():
        lines.append(f"| {name} | {g['rss_start_mb']} | {g['rss_end_mb']} | {g['growth_mb']} | "
                     f"{g['mb_per_100k_connections']} | {g['mb_per_100k_links']} | "
                     f"{g['mb_per_100k_management']} | "
                     f"{g['py_objects']} |")
    lines += ["", f"connections {t.get('connections', 0)}, links {t.get('links', 0)}, management requests "
              f"{result['management_requests']} (failed polls {result['qdstat_failed']}), "
              f"garbage connections "
              f"{result['garbage_connections']}, policy-refused {result['refused_connections']} "
              f"(not refused: {result['refused_failed']}), router kills {result['kills']}",
              f"unsettled sent {t.get('sent_unsettled', 0)}: accepted {t.get('accepted', 0)}, released "
              f"{t.get('released', 0)}, modified {t.get('modified', 0)}, "
              f"rejected {t.get('rejected', 0)}, lost "
              f"with the sender's connection {t.get('lost', 0)}, pending {t.get('pending', 0)}, "
              f"unaccounted {t.get('unaccounted', 0)}; pre-settled sent {t.get('sent_presettled', 0)}",
              "fds: " + ", ".join(f"{n} {f['before']} -> {f['after']}" for n, f in result["fds"].items()),
              "problems: " + ("; ".join(result["problems"]) or "none"), ""]
    return "\n".join(lines)
