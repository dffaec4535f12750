"""Which router connects to which: full mesh, or a sparser mesh that survives any one failure."""

from __future__ import annotations

from typing import List, Set, Tuple

FULL_MESH = "FullMesh"
REDUNDANT = "Redundant"


def edges(kind: str, size: int, degree: int = 3) -> List[Tuple[int, int]]:
    """(connecting router, listening router) pairs, the connecting one always the higher
    ordinal: a router only connects to routers that started before it (StatefulSets start
    them in order), and scaling up never changes the connectors of routers already running."""
    if kind == FULL_MESH:
        return [(i, j) for i in range(size) for j in range(i)]
    if kind == REDUNDANT:
        return _redundant(size, degree)
    raise ValueError(f"unknown topology {kind!r}")


def _redundant(size: int, degree: int) -> List[Tuple[int, int]]:
    """Each new router connects to ``ceil(degree / 2)`` earlier ones (its nearest predecessor
    and others spread at doubling distances), so every router ends up with about ``degree``
    links and the graph stays connected after losing any one link or router: each router
    from 2 on has two distinct earlier neighbours, and router 1 also reaches router 0
    through router 2 once that exists."""
    if degree < 2:
        raise ValueError("degree must be at least 2")
    per_router = max(2, (degree + 1) // 2)
    pairs: Set[Tuple[int, int]] = set()
    for i in range(1, size):
        targets: List[int] = []
        step = 1
        while len(targets) < min(per_router, i):
            candidate = i - step
            if candidate < 0:
                candidate = (i - step) % i  # wrap within the earlier routers
            if candidate not in targets:
                targets.append(candidate)
            step *= 2
            if step > 2 * size:
                # Small i: take whatever earlier routers are left.
                for j in range(i):
                    if j not in targets and len(targets) < min(per_router, i):
                        targets.append(j)
                break
        pairs.update((i, j) for j in targets)
    return sorted(pairs)


def neighbours(pairs: List[Tuple[int, int]], ordinal: int) -> List[int]:
    return sorted({b for a, b in pairs if a == ordinal} | {a for a, b in pairs if b == ordinal})
