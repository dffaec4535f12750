"""The canary: probe messages between the routers of a mesh, through the mesh's own routing,
after the apply stage of a drift check (probe.py), summarised for the status stage (summary.py).
Which pairs each check probes: pairs.py.  In mode Routers the routers measure their neighbours
and the operator reads it (routers.py)."""

from .pairs import pairs_for_round
from .probe import PairResult, Results, next_round, probe_mesh
from .routers import from_routers
from .summary import CanarySummary, summarise

__all__ = ["CanarySummary", "PairResult", "Results", "from_routers", "next_round", "pairs_for_round",
           "probe_mesh", "summarise"]
