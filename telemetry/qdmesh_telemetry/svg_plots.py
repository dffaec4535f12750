"""Small inline-SVG plots for the HTML report (no JavaScript, no plotting library).

Every plot is an ``<svg class="plot" data-plot=NAME>`` with real shapes (polylines, rects),
so a browser renders it as is and a test can find its parts in the DOM.
"""

from __future__ import annotations

import math
from html import escape
from typing import Dict, List, Sequence, Tuple

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
OUTCOME_COLOURS = {"accepted": "#2ca02c", "released": "#ff7f0e", "rejected": "#d62728",
                   "modified": "#9467bd", "dropped_presettled": "#7f7f7f"}


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.2g}"


def _empty(name: str, text: str) -> str:
    return (f'<svg class="plot" data-plot="{name}" width="480" height="60" role="img">'
            f'<text x="10" y="35" fill="#666">{escape(text)}</text></svg>')


def line_chart(name: str, series: Dict[str, List[Tuple[float, float]]], y_label: str,
               width: int = 720, height: int = 300) -> str:
    """One polyline per series of (x = epoch seconds, y) points."""
    points = [p for values in series.values() for p in values]
    if not points:
        return _empty(name, "no data")
    left, right, top, bottom = 70, 170, 20, 40
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y1 = max(p[1] for p in points) or 1.0
    x_span = (x1 - x0) or 1.0

    def sx(x: float) -> float:
        return left + (x - x0) / x_span * (width - left - right)

    def sy(y: float) -> float:
        return height - bottom - y / y1 * (height - top - bottom)

    parts = [f'<svg class="plot" data-plot="{name}" width="{width}" height="{height}" role="img" '
             f'xmlns="http://www.w3.org/2000/svg">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
             'stroke="#333"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#333"/>']
    for i in range(5):
        value = y1 * i / 4
        parts.append(f'<text x="{left - 6}" y="{sy(value) + 4:.1f}" font-size="11" text-anchor="end">'
                     f'{_fmt(value)}</text>')
    parts.append(f'<text x="14" y="{top + (height - top - bottom) / 2:.0f}" font-size="11" '
                 f'transform="rotate(-90 14 {top + (height - top - bottom) / 2:.0f})" text-anchor="middle">'
                 f'{escape(y_label)}</text>')
    for x, label in ((x0, "start"), (x1, "end")):
        stamp = _clock(x)
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" font-size="11" text-anchor="middle">'
                     f'{stamp} {label}</text>')
    for i, (label, values) in enumerate(sorted(series.items())):
        colour = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(values))
        if len(values) == 1:
            x, y = values[0]
            parts.append(f'<circle class="series" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>')
        else:
            parts.append(f'<polyline class="series" data-series="{escape(label)}" points="{coords}" '
                         f'fill="none" stroke="{colour}" stroke-width="2"/>')
        ly = top + 14 + i * 16
        parts.append(f'<rect x="{width - right + 10}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{width - right + 24}" y="{ly}" font-size="11">{escape(label[:22])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _clock(ts: float) -> str:
    import time
    return time.strftime("%H:%M:%S", time.gmtime(ts))


def heat_map(name: str, routers: Sequence[str], cells: Dict[Tuple[str, str], float], size: int = 44) -> str:
    """Rows are sources, columns targets; darker is more deliveries."""
    if not routers:
        return _empty(name, "no inter-router traffic")
    peak = max(cells.values(), default=0.0) or 1.0
    left, top = 90, 70
    width, height = left + size * len(routers) + 20, top + size * len(routers) + 20
    parts = [f'<svg class="plot" data-plot="{name}" width="{width}" height="{height}" role="img" '
             f'xmlns="http://www.w3.org/2000/svg">',
             f'<text x="{left}" y="14" font-size="11">to router &#8594;</text>',
             f'<text x="4" y="{top - 6}" font-size="11">from &#8595;</text>']
    for j, target in enumerate(routers):
        x = left + j * size + size / 2
        parts.append(f'<text x="{x:.0f}" y="{top - 8}" font-size="11" text-anchor="middle">'
                     f'{escape(target[:8])}</text>')
    for i, source in enumerate(routers):
        y = top + i * size
        parts.append(f'<text x="{left - 6}" y="{y + size / 2 + 4:.0f}" font-size="11" text-anchor="end">'
                     f'{escape(source[:12])}</text>')
        for j, target in enumerate(routers):
            value = cells.get((source, target), 0.0)
            shade = 255 - int(200 * math.sqrt(value / peak)) if value > 0 else 250
            fill = f"rgb({shade},{shade},255)" if value > 0 else "#f4f4f4"
            text_colour = "#fff" if shade < 140 else "#000"
            parts.append(f'<rect class="cell" data-source="{escape(source)}" data-target="{escape(target)}" '
                         f'data-value="{value:g}" x="{left + j * size}" y="{y}" width="{size - 2}" '
                         f'height="{size - 2}" fill="{fill}"><title>{escape(source)} &#8594; '
                         f'{escape(target)}: '
                         f'{value:,.0f}</title></rect>')
            if value > 0:
                parts.append(f'<text x="{left + j * size + size / 2 - 1:.0f}" y="{y + size / 2 + 3:.0f}" '
                             f'font-size="10" text-anchor="middle" fill="{text_colour}">{_fmt(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stacked_bars(name: str, bars: List[Tuple[str, Dict[str, float]]], width: int = 720) -> str:
    """One horizontal bar per label, split by outcome (share of that label's total)."""
    bars = [(label, parts) for label, parts in bars if sum(parts.values()) > 0]
    if not bars:
        return _empty(name, "no outcomes recorded")
    left, bar_height, gap, legend = 160, 18, 6, 24
    height = legend + len(bars) * (bar_height + gap) + 10
    span = width - left - 80
    out = [f'<svg class="plot" data-plot="{name}" width="{width}" height="{height}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg">']
    x = float(left)
    for outcome, colour in OUTCOME_COLOURS.items():
        out.append(f'<rect x="{x}" y="4" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{x + 14}" y="13" font-size="11">{outcome.replace("_", " ")}</text>')
        x += 14 + 8 * len(outcome) + 12
    for i, (label, parts) in enumerate(bars):
        y = legend + i * (bar_height + gap)
        total = sum(parts.values())
        out.append(f'<text x="{left - 6}" y="{y + 13}" font-size="11" text-anchor="end">'
                   f'{escape(label[:24])}</text>')
        x = float(left)
        for outcome, colour in OUTCOME_COLOURS.items():
            value = parts.get(outcome, 0.0)
            if value <= 0:
                continue
            w = value / total * span
            out.append(f'<rect class="segment" data-outcome="{outcome}" data-value="{value:g}" x="{x:.1f}" '
                       f'y="{y}" width="{w:.1f}" height="{bar_height}" fill="{colour}">'
                       f'<title>{escape(label)} '
                       f'{outcome}: {value:,.0f}</title></rect>')
            x += w
        out.append(f'<text x="{left + span + 6}" y="{y + 13}" font-size="11">{_fmt(total)}</text>')
    out.append("</svg>")
    return "".join(out)
