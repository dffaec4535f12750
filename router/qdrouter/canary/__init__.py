"""Round trips to neighbouring routers (qdmesh's own): with the router's
canaryIntervalSeconds above 0, an interior router asks each neighbour's management for its
management nodes every interval and times the answer (probe.py); what it measured, per
neighbour, is kept bounded in book.py and shown in router.node and /metrics."""

from .book import BUCKETS, PeerStats, ProbeBook
from .probe import NeighbourProbe, Neighbours

__all__ = ["BUCKETS", "NeighbourProbe", "Neighbours", "PeerStats", "ProbeBook"]
