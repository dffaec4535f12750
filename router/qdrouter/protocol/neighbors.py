"""HELLO-based neighbour discovery (upstream hello.py + the neighbour part of node.py).

Per inter-router connection we remember which router ids we heard a HELLO from and when,
and which of them listed us in their 'seen' list (two-way).  A router is a neighbour while
at least one connection to it is two-way and refreshed within helloMaxAge.

Deviation from upstream: upstream keeps one global "heard" list and sends it on every
connection; we keep it per connection, so a HELLO on connection C only claims what was heard
on C.  The body is the same, and for the common case (one connection per peer) so is the
meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Hashable, List, Tuple

from qdrouter.protocol.messages import Hello


@dataclass(frozen=True)
class NeighborChange:
    up: bool
    router_id: str
    conn_key: Hashable | None  # best remaining connection (up) or the lost one (down)
    cost: int


@dataclass
class _Connection:
    cost: int
    heard: Dict[str, float] = field(default_factory=dict)    # id -> last HELLO time
    two_way: Dict[str, float] = field(default_factory=dict)  # id -> last HELLO that saw us


class NeighborTable:
    def __init__(self, my_id: str, instance: int, hello_max_age: float) -> None:
        self.my_id = my_id
        self.instance = instance
        self.hello_max_age = hello_max_age
        self._conns: Dict[Hashable, _Connection] = {}
        self._neighbors: Dict[str, Tuple[Hashable, int]] = {}  # id -> (best conn, cost)
        #: Set when a HELLO with our id but another instance arrives (upstream logs CRITICAL).
        self.duplicate_id_detected = False

    # -- connections --------------------------------------------------------------------

    def link_up(self, conn_key: Hashable, cost: int) -> List[NeighborChange]:
        conn = self._conns.get(conn_key)
        if conn is None:
            self._conns[conn_key] = _Connection(cost)
            return []
        conn.cost = cost
        return self._reconcile()

    def link_down(self, conn_key: Hashable) -> List[NeighborChange]:
        # Upstream's linkLost: drop the neighbour at once instead of waiting for helloMaxAge.
        if self._conns.pop(conn_key, None) is None:
            return []
        return self._reconcile()

    def connections(self) -> List[Hashable]:
        return list(self._conns)

    # -- HELLO --------------------------------------------------------------------------

    def hello_for(self, conn_key: Hashable) -> Hello:
        conn = self._conns[conn_key]
        return Hello(id=self.my_id, seen=sorted(conn.heard), instance=self.instance)

    def on_hello(self, conn_key: Hashable, msg: Hello, now: float) -> List[NeighborChange]:
        if msg.id == self.my_id:
            if msg.instance != self.instance:
                self.duplicate_id_detected = True
            return []
        conn = self._conns.get(conn_key)
        if conn is None:
            # A HELLO on a connection nobody announced: track it at the default cost rather
            # than drop it, so the caller may skip neighbor_link_up for cost-1 links.
            conn = self._conns[conn_key] = _Connection(1)
        conn.heard[msg.id] = now
        if self.my_id in msg.seen:
            conn.two_way[msg.id] = now
        else:
            # The peer no longer hears us (e.g. it restarted): the link is one-way now.
            conn.two_way.pop(msg.id, None)
        return self._reconcile()

    def expire(self, now: float) -> List[NeighborChange]:
        for conn in self._conns.values():
            for table in (conn.heard, conn.two_way):
                for rid in [r for r, t in table.items() if now - t > self.hello_max_age]:
                    del table[rid]
        return self._reconcile()

    # -- state --------------------------------------------------------------------------

    def neighbors(self) -> Dict[str, Tuple[Hashable, int]]:
        """{neighbour id: (connection to use, cost)} for two-way neighbours."""
        return dict(self._neighbors)

    def two_way_through(self, conn_key: Hashable) -> List[str]:
        """The routers that hear us, and we them, on one connection."""
        conn = self._conns.get(conn_key)
        return sorted(conn.two_way) if conn is not None else []

    def conn_for(self, router_id: str) -> Hashable | None:
        entry = self._neighbors.get(router_id)
        return entry[0] if entry else None

    def _reconcile(self) -> List[NeighborChange]:
        best: Dict[str, Tuple[Hashable, int]] = {}
        for key, conn in self._conns.items():
            for rid in conn.two_way:
                # Cheapest connection wins; the first announced wins a tie (dict order).
                if rid not in best or conn.cost < best[rid][1]:
                    best[rid] = (key, conn.cost)
        changes: List[NeighborChange] = []
        for rid, (key, cost) in self._neighbors.items():
            if rid not in best:
                changes.append(NeighborChange(False, rid, key, cost))
        for rid, (key, cost) in best.items():
            old = self._neighbors.get(rid)
            if old is None or old != (key, cost):
                changes.append(NeighborChange(True, rid, key, cost))
        self._neighbors = best
        return changes
