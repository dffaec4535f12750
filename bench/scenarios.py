"""What the benchmarks measure: the single-router scenarios and one run's measurement.

Standard library only (Python 3.9+).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    receivers: int
    address: str
    presettled: bool
    multicast: bool = False

    @property
    def fanout(self) -> int:
        """Deliveries per message sent."""
        return self.receivers if self.multicast else 1


SCENARIOS: Dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("1to1-presettled", "1->1 pre-settled", 1, "closest/bench", presettled=True),
        Scenario("1to1-unsettled", "1->1 unsettled", 1, "closest/bench", presettled=False),
        Scenario("1to4-balanced", "1->4 balanced (unsettled)", 4, "balanced/bench", presettled=False),
        Scenario(
            "1to4-multicast",
            "1->4 multicast (pre-settled)",
            4,
            "multicast/bench",
            presettled=True,
            multicast=True,
        ),
    )
}


@dataclass
class Measurement:
    """One sender -> receivers run, as seen end to end."""

    kind: str  # "direct", "relay", "forward", "router", "line3" (bench/mesh.py) or "warmup"
    messages: int  # messages the sender completed (sent if pre-settled, settled otherwise)
    delivered: int  # deliveries counted by all receivers together
    expected_deliveries: int
    seconds: float  # sender's first send -> last receipt at any receiver
    msgs_per_sec: float  # messages sent per second that reached (all) receivers
    deliveries_per_sec: float
    p50_us: float | None
    p99_us: float | None
    max_us: float | None
    sender_msgs_per_sec: float
    # CPU used by the load generators over the run, as % of one core: evidence
    # that they are not the bottleneck (far from 100% while the router is).
    sender_cpu_pct: float
    receiver_cpu_pct: float  # the busiest receiver
    outcomes: Dict[str, int]
    sender: Dict[str, Any] = field(repr=False)
    receivers: List[Dict[str, Any]] = field(repr=False)
    # The router process's CPU over the run (in a "relay" or "forward" run, that process's): its
    # busy share of one core (below 100% while the run is limited elsewhere, e.g. by clients
    # sharing the other cores) and per message sent.
    router_cpu_pct: float | None = None
    router_cpu_us_per_msg: float | None = None
    p999_us: float | None = None

    @property
    def lost(self) -> int:
        return self.expected_deliveries - self.delivered
