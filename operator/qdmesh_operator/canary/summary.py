"""What the canary's last results say, for the RouterMesh's status and its Degraded condition.
Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from .probe import PairResult

#: Failing pairs the status names (the count says how many there are).
NAMED_FAILURES = 5


@dataclass
class CanarySummary:
    probed: int = 0
    reachable: int = 0
    p50_ms: float | None = None
    worst_ms: float | None = None
    worst: str = ""
    failing: List[str] = field(default_factory=list)

    def status(self) -> Dict[str, Any]:
        """``status.canary``."""
        found: Dict[str, Any] = {"pairs": f"{self.reachable}/{self.probed} reachable"}
        if self.p50_ms is not None:
            found.update(p50Ms=self.p50_ms, worstMs=self.worst_ms, worstPair=self.worst)
        if self.failing:
            found["failing"] = self.failing[:NAMED_FAILURES]
        return found

    def degraded_message(self) -> str:
        return (f"{self.probed - self.reachable} of {self.probed} router pairs cannot reach each other "
                f"through the mesh: " + "; ".join(self.failing[:NAMED_FAILURES]))


def summarise(results: Mapping[Tuple[str, str], PairResult]) -> CanarySummary:
    found = CanarySummary(probed=len(results))
    times: List[Tuple[float, str]] = []
    for (source, destination), result in sorted(results.items()):
        if result.seconds is None:
            found.failing.append(f"{source} -> {destination}: {result.error}")
        else:
            times.append((result.seconds, f"{source} -> {destination}"))
    found.reachable = len(times)
    if times:
        ordered = sorted(times)
        found.p50_ms = round(ordered[(len(ordered) - 1) // 2][0] * 1000, 2)
        found.worst_ms = round(ordered[-1][0] * 1000, 2)
        found.worst = ordered[-1][1]
    return found
