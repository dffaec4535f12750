"""Next hops, costs, valid origins and the radius, computed exactly as qdrouterd 1.19 does
(python/qpid_dispatch_internal/router/path.py, PathEngine), so that in a mesh of both kinds
every router agrees on every path.

Agreement matters because qdrouterd checks it: its balanced-anycast forwarder passes a
message from origin O toward router D only if it is on O's shortest path to D (D's valid
origins include O), and releases it otherwise. A qdmesh router that broke an equal-cost tie
differently would send traffic through a router that refuses it. tests/unit/test_paths_vs_c.py
feeds the same link states to this module and to qdrouterd's own path.py.

The rules, as upstream's
------------------------
* The collection is {router: {peer: cost}}: this router's link state, then every router known
  (one whose link state has not arrived yet has no peers). A peer named in a link state but
  absent from the collection gets a stand-in link state with one link, cost 1, back to the
  first router (in the collection's order) that named it.
* A link u->v is used when u lists v, at u's cost, whatever v lists (upstream does not
  check the other end).
* Dijkstra settles routers in order of (cost, id); a router's predecessor is the first settled
  router that gave it its lowest cost. So equal-cost ties go to the path whose last router
  before the tie settled first: lower cost so far, then lower id.
* Next hop: the first router after the root on the predecessor chain. Hops: the length of
  that chain. Radius: the most hops to any reachable router (0 if none).
* Valid origins of destination D: the routers O (reachable from here, not here) whose own
  tree reaches D through this router, strictly between O and D. qdrouterd adds itself to
  every destination's valid origins when it loads them into its forwarder.

These trees are not subpath-consistent (O's path to D through R need not continue as R's own
path to D), which is why multicast in an all-qdmesh mesh uses trees of its own
(protocol/multicast_trees.py); docs/routing-protocol.md says what each is used for.
"""

from __future__ import annotations

from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Dict, FrozenSet, List, Mapping, Tuple


@dataclass(frozen=True)
class Route:
    next_hop: str  # neighbour id to forward through (== destination for a neighbour)
    cost: int
    hops: int


@dataclass(frozen=True)
class Paths:
    routes: Dict[str, Route]  # every router reachable from here
    valid_origins: Dict[str, FrozenSet[str]]  # destination -> origins (as upstream's, without us)
    radius: int  # hops to the farthest reachable router


@dataclass
class Graph:
    """The collection with upstream's stand-in link states, by index; indices follow the
    ids' sort order, so comparing indices compares ids as upstream's NodeSet does."""

    ids: List[str]
    index: Dict[str, int]
    adj: List[List[Tuple[int, int]]]  # per router: (peer index, cost) in its link state's order


def build_graph(collection: Mapping[str, Mapping[str, int]]) -> Graph:
    expanded: Dict[str, Mapping[str, int]] = {}
    for rid, peers in collection.items():
        expanded[rid] = peers
        for peer in peers:
            if peer not in expanded:
                expanded[peer] = {rid: 1}  # replaced if the peer's own entry comes later
    ids = sorted(expanded)
    index = {rid: i for i, rid in enumerate(ids)}
    adj: List[List[Tuple[int, int]]] = [[] for _ in ids]
    for rid, peers in expanded.items():
        adj[index[rid]] = [(index[peer], cost) for peer, cost in peers.items()]
    return Graph(ids, index, adj)


def _tree(adj: List[List[Tuple[int, int]]], root: int) -> Tuple[List[int], List[int], List[int], List[int]]:
    """Upstream's Dijkstra from root: (cost, predecessor, hops, settle order); cost -1 and
    predecessor -1 where unreachable. Settling by (cost, index) is upstream's (cost, id)."""
    n = len(adj)
    cost = [-1] * n
    prev = [-1] * n
    hops = [0] * n
    done = bytearray(n)
    cost[root] = 0
    heap: List[Tuple[int, int]] = [(0, root)]
    order: List[int] = []
    while heap:
        d, u = heappop(heap)
        if done[u] or d != cost[u]:
            continue
        done[u] = 1
        order.append(u)
        for v, w in adj[u]:
            if done[v]:
                continue
            alt = d + w
            if cost[v] < 0 or alt < cost[v]:
                cost[v] = alt
                prev[v] = u
                hops[v] = hops[u] + 1
                heappush(heap, (alt, v))
    return cost, prev, hops, order


def compute_routes(my_id: str, graph: Graph) -> Tuple[Dict[str, Route], int]:
    """(next hop, cost and hops of every router reachable from my_id; the radius)."""
    me = graph.index.get(my_id)
    if me is None:
        return {}, 0
    cost, prev, hops, order = _tree(graph.adj, me)
    first = [-1] * len(graph.ids)
    routes: Dict[str, Route] = {}
    radius = 0
    for v in order[1:]:  # predecessors settle before their successors
        p = prev[v]
        first[v] = v if p == me else first[p]
        routes[graph.ids[v]] = Route(graph.ids[first[v]], cost[v], hops[v])
        radius = max(radius, hops[v])
    return routes, radius


def _below_me(adj: List[List[Tuple[int, int]]], root: int, me: int) -> List[int]:
    """Routers whose path in root's tree passes strictly through me.

    root's Dijkstra, each label flagged when its predecessor is me or flagged; it stops once
    me is settled and no unsettled router holds a flagged label (a flag spreads only from a
    settled flagged router, so none can appear later). Far-away origins end early."""
    n = len(adj)
    cost = [-1] * n
    flag = bytearray(n)
    done = bytearray(n)
    cost[root] = 0
    heap: List[Tuple[int, int]] = [(0, root)]
    pending = 0  # unsettled routers whose current label is flagged
    me_done = False
    found: List[int] = []
    while heap:
        d, u = heappop(heap)
        if done[u] or d != cost[u]:
            continue
        done[u] = 1
        fu = flag[u]
        if fu:
            pending -= 1
            found.append(u)
        if u == me:
            me_done = True
            fu = 1
        for v, w in adj[u]:
            if done[v]:
                continue
            alt = d + w
            if cost[v] < 0 or alt < cost[v]:
                if flag[v] != fu:
                    pending += 1 if fu else -1
                    flag[v] = fu
                cost[v] = alt
                heappush(heap, (alt, v))
        if me_done and pending == 0:
            break
    return found


class ValidOrigins:
    """qdrouterd's valid origins, an origin's share computed when first asked for: upstream
    runs one Dijkstra per origin (it caps meshes at 128 routers), while forwarding asks only
    about the origins of balanced messages that pass through here."""

    def __init__(self, my_id: str, graph: Graph | None, routes: Mapping[str, Route]) -> None:
        self._me = graph.index.get(my_id) if graph is not None else None
        self._graph = graph
        self._routes = routes
        self._below: Dict[str, FrozenSet[str]] = {}
        self._table: Dict[str, FrozenSet[str]] | None = None

    def below(self, origin: str) -> FrozenSet[str]:
        """The destinations whose path from ``origin`` runs through me."""
        found = self._below.get(origin)
        if found is None:
            graph = self._graph
            if self._me is None or graph is None or origin not in self._routes:
                return frozenset()  # not cached: only reachable routers take room
            found = frozenset(graph.ids[d] for d in _below_me(graph.adj, graph.index[origin], self._me))
            self._below[origin] = found
        return found

    def includes(self, destination: str, origin: str) -> bool:
        return destination in self.below(origin)

    def table(self) -> Dict[str, FrozenSet[str]]:
        """{destination: origins} for every reachable router, as upstream's PathEngine gives."""
        if self._table is None:
            result: Dict[str, List[str]] = {dest: [] for dest in self._routes}
            for origin in self._routes:
                for dest in self.below(origin):
                    result[dest].append(origin)
            self._table = {dest: frozenset(origins) for dest, origins in result.items()}
        return self._table


def compute_valid_origins(my_id: str, graph: Graph, routes: Mapping[str, Route]) -> Dict[str, FrozenSet[str]]:
    """{destination: origins whose trees reach it through me} for every reachable router."""
    return ValidOrigins(my_id, graph, routes).table()


def compute_paths(my_id: str, collection: Mapping[str, Mapping[str, int]]) -> Paths:
    graph = build_graph(collection)
    routes, radius = compute_routes(my_id, graph)
    return Paths(routes, compute_valid_origins(my_id, graph, routes), radius)
