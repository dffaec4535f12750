"""What the neighbour probe knows (pure: no I/O, times passed in): the probe outstanding to
each neighbour, and each neighbour's round trips and failures.

At most one probe is outstanding per neighbour: a neighbour that does not answer gets its
next probe only once the last one has timed out, so a router that is down costs one request
per interval, never a queue of them. Only current neighbours are kept: one that leaves is
forgotten with everything measured about it."""

from __future__ import annotations

import bisect
import itertools
import secrets
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Tuple

# Histogram bounds in seconds: 0.1 ms (neighbours on one host) to 5 s (the longest wait).
BUCKETS: Tuple[float, ...] = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                              0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# Weight of the newest round trip in the moving average.
EWMA_WEIGHT = 0.3
MAX_TIMEOUT_S = 5.0


@dataclass
class PeerStats:
    """One neighbour's measurements. ``bucket_counts[i]`` counts round trips up to
    ``BUCKETS[i]`` (not cumulative); the last entry counts those above every bound."""
    last: float | None = None
    average: float | None = None
    failures: int = 0          # in a row, since the last answer
    failures_total: int = 0
    count: int = 0
    total: float = 0.0
    bucket_counts: List[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))

    def answered(self, seconds: float) -> None:
        self.last = seconds
        self.average = seconds if self.average is None else (
            EWMA_WEIGHT * seconds + (1 - EWMA_WEIGHT) * self.average)
        self.failures = 0
        self.count += 1
        self.total += seconds
        self.bucket_counts[bisect.bisect_left(BUCKETS, seconds)] += 1

    def failed(self) -> None:
        self.failures += 1
        self.failures_total += 1

    def cumulative_buckets(self) -> List[Tuple[float, int]]:
        """(upper bound, round trips up to it), the last bound +Inf: a Prometheus histogram."""
        running = 0
        out = []
        for bound, counted in zip((*BUCKETS, float("inf")), self.bucket_counts):
            running += counted
            out.append((bound, running))
        return out


class ProbeBook:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = min(timeout_s, MAX_TIMEOUT_S)
        self.peers: Dict[str, PeerStats] = {}
        self._outstanding: Dict[str, Tuple[str, float]] = {}  # peer -> (correlation id, sent at)
        self._by_correlation: Dict[str, str] = {}
        self._ids = itertools.count(1)
        # Anyone may send to the reply-to address: an answer counts only with the id of a
        # request actually sent, which a client cannot guess.
        self._token = secrets.token_hex(8)

    def round(self, neighbours: Iterable[str], now: float) -> List[Tuple[str, str]]:
        """A new interval: forget departed neighbours, fail timed-out probes, and return the
        (neighbour, correlation id) of each probe to send now (those with none outstanding)."""
        current = set(neighbours)
        for peer in [peer for peer in self.peers if peer not in current]:
            del self.peers[peer]
            self._drop(peer)
        self.expire(now)
        sends = []
        for peer in sorted(current):
            self.peers.setdefault(peer, PeerStats())
            if peer in self._outstanding:
                continue
            correlation = f"qdmesh.canary-{self._token}-{next(self._ids)}"
            self._outstanding[peer] = (correlation, now)
            self._by_correlation[correlation] = peer
            sends.append((peer, correlation))
        return sends

    def expire(self, now: float) -> None:
        """Count every probe unanswered for the timeout as a failure."""
        for peer, (_, sent) in list(self._outstanding.items()):
            if now - sent >= self.timeout_s:
                self._drop(peer)
                self.peers[peer].failed()

    def not_sent(self, peer: str) -> None:
        """The probe could not leave (no route to the neighbour yet): a failure at once."""
        if peer in self._outstanding:
            self._drop(peer)
            self.peers[peer].failed()

    def answered(self, correlation: str, now: float) -> str | None:
        """The neighbour whose outstanding probe this answers, its round trip recorded; None
        for an answer to a probe already timed out or never sent."""
        peer = self._by_correlation.get(correlation)
        if peer is None:
            return None
        _, sent = self._outstanding[peer]
        self._drop(peer)
        self.peers[peer].answered(max(0.0, now - sent))
        return peer

    def outstanding(self) -> int:
        return len(self._outstanding)

    def _drop(self, peer: str) -> None:
        entry = self._outstanding.pop(peer, None)
        if entry is not None:
            self._by_correlation.pop(entry[0], None)
