"""Which pairs of routers one round of the canary probes.  Pure.

Every router probes one other per round: in round ``k`` router ``i`` (of the ``n`` sorted by
name) probes router ``i + 1 + k mod (n - 1)``.  So a round costs ``n`` probes, whatever the
size of the mesh, and every ordered pair is probed once every ``n - 1`` rounds (a mesh of 64
routers: 64 probes a round, each of its 4,032 pairs every 63 rounds)."""

from __future__ import annotations

from typing import List, Sequence, Tuple


def pairs_for_round(routers: Sequence[str], round_no: int) -> List[Tuple[str, str]]:
    ordered = sorted(routers)
    n = len(ordered)
    if n < 2:
        return []
    step = 1 + round_no % (n - 1)
    return [(ordered[i], ordered[(i + step) % n]) for i in range(n)]
