"""Each canary pair's round trips as a Prometheus histogram
(``qdmesh_canary_pair_round_trip_seconds{namespace,mesh,source,destination}``): every probe's
round trip counted once, into fixed buckets, so that a pair's distribution over time (its
p99, how often it is slow) can be read, not only its last value.

Bounded: a pair's buckets exist while the pair does (a router that leaves the mesh takes its
pairs with it) and a mesh's go with the mesh; ``len(BUCKETS) + 2`` numbers a pair."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

FAMILY = "qdmesh_canary_pair_round_trip_seconds"
HELP = ("Round trips of the canary's probes from the source router to the destination router's "
        "management and back, through the mesh.")
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

Pair = Tuple[str, str]
Key = Tuple[str, str]


@dataclass
class _Histogram:
    counts: List[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    total: float = 0.0
    count: int = 0
    #: When the last probe counted was made (a result seen again is not counted twice).
    last_at: float = -1.0

    def add(self, seconds: float) -> None:
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                self.counts[i] += 1
        self.total += seconds
        self.count += 1


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class PairHistograms:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._meshes: Dict[Key, Dict[Pair, _Histogram]] = {}

    def observe(self, namespace: str, mesh: str, results: Mapping[Pair, Any]) -> None:
        """A reconciliation's canary results (canary/probe.py PairResult by pair): each probe
        not counted yet is; pairs no longer among the results are dropped."""
        with self._lock:
            before = self._meshes.get((namespace, mesh), {})
            now: Dict[Pair, _Histogram] = {}
            for pair, result in results.items():
                histogram = before.get(pair) or _Histogram()
                if result.seconds is not None and result.at > histogram.last_at:
                    histogram.add(float(result.seconds))
                    histogram.last_at = result.at
                now[pair] = histogram
            self._meshes[(namespace, mesh)] = now

    def forget(self, namespace: str, mesh: str) -> None:
        with self._lock:
            self._meshes.pop((namespace, mesh), None)

    def render(self) -> List[str]:
        lines = [f"# HELP {FAMILY} {HELP}", f"# TYPE {FAMILY} histogram"]
        with self._lock:
            for (namespace, mesh), pairs in sorted(self._meshes.items()):
                for (source, destination), h in sorted(pairs.items()):
                    if not h.count:
                        continue
                    labels = (f'namespace="{_label(namespace)}",mesh="{_label(mesh)}",'
                              f'source="{_label(source)}",destination="{_label(destination)}"')
                    for bound, count in zip(BUCKETS, h.counts):
                        lines.append(f'{FAMILY}_bucket{{{labels},le="{bound:g}"}} {count}')
                    lines.append(f'{FAMILY}_bucket{{{labels},le="+Inf"}} {h.count}')
                    lines.append(f"{FAMILY}_sum{{{labels}}} {h.total!r}")
                    lines.append(f"{FAMILY}_count{{{labels}}} {h.count}")
        return lines
