"""The canary of mode Routers: what each router measured of its neighbours (a management
request to the neighbour's agent every ``canaryIntervalSeconds``, qdmesh's router.node
attributes ``roundTripSeconds`` and ``probeFailures``), read with the rest of the router's
state at each reconciliation: the operator probes nothing itself.  Pairs are the mesh's
inter-router links, each measured from both ends.  Pure."""

from __future__ import annotations

import time
from typing import Mapping

from ..apply.management import RouterOutcome
from ..contract import is_foreign
from .probe import PairResult, Results

#: Probes failed in a row after which a neighbour counts as unreachable (a lost hello or two
#: is not a failure; qdrouterd's helloMaxAge is three hello intervals).
FAILURES = 3


def from_routers(outcomes: Mapping[str, RouterOutcome]) -> Results:
    """Each (router, neighbour) pair a router measured; neighbours not measured yet are left
    out rather than counted as failing."""
    now = time.time()
    results: Results = {}
    for rid, outcome in sorted(outcomes.items()):
        if not outcome.reachable:
            continue
        mesh = rid.rsplit("-", 1)[0]
        for peer, (seconds, failures) in sorted(outcome.neighbours.items()):
            if is_foreign(mesh, peer):  # a linked mesh's router: not this mesh's pair
                continue
            if failures >= FAILURES:
                results[(rid, peer)] = PairResult(None, f"{failures} probes in a row unanswered", now)
            elif seconds is not None:
                results[(rid, peer)] = PairResult(seconds, "", now)
    return results
