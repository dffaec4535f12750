"""Stage 1, observe: the one read of the API server a reconciliation makes (cluster.py)."""

from .cluster import ROUTING_PLURALS, Observed, observe

__all__ = ["ROUTING_PLURALS", "Observed", "observe"]
