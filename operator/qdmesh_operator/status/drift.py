"""Which routers' changes put back what was changed by hand (drift), whichever trigger found it.

A reconciliation started by a pod event or a spec change may be the first to see an entity
deleted by hand; what it puts back is still drift, not a live change the user asked for.  A
router's changes are drift when the previous reconciliation left that router in sync with
the same desired entities: nothing the operator was asked for changed since.  Pure."""

from __future__ import annotations

from typing import Dict, FrozenSet, Mapping

from ..apply.management import RouterOutcome
from ..desired.state import MeshState

#: Router id -> fingerprint of the desired entities it was last seen in sync with.
InSync = Dict[str, int]


def fingerprint(state: MeshState, router_id: str) -> int:
    return hash(repr(state.live_entities(router_id)))


def in_sync(state: MeshState, outcomes: Mapping[str, RouterOutcome]) -> InSync:
    """The routers this reconciliation left in sync, with what they hold."""
    return {rid: fingerprint(state, rid) for rid, outcome in outcomes.items()
            if outcome.in_sync and rid in state.entities}


def unchanged_since(previous: Mapping[str, int], state: MeshState) -> FrozenSet[str]:
    """The routers whose desired entities are those they were last in sync with: any change
    made on them now repairs drift."""
    return frozenset(rid for rid, print_ in previous.items()
                     if rid in state.entities and fingerprint(state, rid) == print_)
