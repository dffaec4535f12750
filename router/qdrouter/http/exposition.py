"""Prometheus text exposition format (version 0.0.4): metric families with HELP and TYPE,
label values escaped, samples of one family together."""

from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

Labels = Dict[str, str]


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class Family:
    """One metric family; ``kind`` is counter, gauge or histogram (a counter's name ends in
    _total; a histogram's samples are its _bucket, _sum and _count series)."""

    def __init__(self, name: str, kind: str, help_text: str) -> None:
        if kind == "counter" and not name.endswith("_total"):
            raise ValueError(f"counter {name} must end in _total")
        self.name = name
        self.kind = kind
        self.help = help_text
        self.samples: List[Tuple[str, Labels, float]] = []  # (name suffix, labels, value)

    def add(self, labels: Labels, value: float) -> None:
        self.samples.append(("", labels, value))

    def add_histogram(self, labels: Labels, buckets: Sequence[Tuple[float, int]], total: float,
                      count: int) -> None:
        """One histogram: ``buckets`` are cumulative (upper bound, observations), +Inf last."""
        for bound, observed in buckets:
            self.samples.append(("_bucket", {**labels, "le": format_value(float(bound))}, observed))
        self.samples.append(("_sum", labels, total))
        self.samples.append(("_count", labels, count))

    def lines(self) -> List[str]:
        out = [f"# HELP {self.name} {escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        for suffix, labels, value in self.samples:
            name = self.name + suffix
            label_text = ",".join(f'{key}="{escape_label(str(val))}"' for key, val in labels.items())
            out.append(f"{name}{{{label_text}}} {format_value(value)}" if label_text
                       else f"{name} {format_value(value)}")
        return out


def render(families: Sequence[Family]) -> str:
    lines: List[str] = []
    for family in families:
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"
