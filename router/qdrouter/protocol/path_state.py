"""What the link-state database gives this router: qdrouterd's next hops, valid origins and
radius (protocol/paths.py), and, while every reachable router shares the multicast-tree
scheme, the trees multicast follows (protocol/multicast_trees.py). Routes are computed at once
(LSRs are routed by them), the trees on the next tick or when first asked for, valid origins
one origin at a time as forwarding asks (protocol/paths.py ValidOrigins)."""

from __future__ import annotations

from typing import Callable, Dict, Mapping

from qdrouter.protocol import multicast_trees, paths
from qdrouter.protocol.multicast_rules import MulticastTrees
from qdrouter.protocol.paths import Route


class PathState:
    def __init__(self, my_id: str) -> None:
        self.my_id = my_id
        self.routes: Dict[str, Route] = {}
        self.radius = 0
        self.tree_mode = True  # no other router yet: nothing to disagree with
        self._collection: Mapping[str, Mapping[str, int]] = {}
        self._graph: paths.Graph | None = None
        self._valid_origins = paths.ValidOrigins(my_id, None, {})
        self._trees: MulticastTrees | None = MulticastTrees()
        self._dirty = False

    def recompute(self, collection: Mapping[str, Mapping[str, int]],
                  scheme_of: Callable[[str], int], tree_scheme: int) -> bool:
        """New link states: recompute routes and the radius; True if routes, radius or the
        multicast rule changed (valid origins are recomputed on the next ask)."""
        self._collection = collection
        self._graph = paths.build_graph(collection)
        routes, radius = paths.compute_routes(self.my_id, self._graph)
        tree_mode = all(scheme_of(rid) == tree_scheme for rid in routes)
        changed = routes != self.routes or radius != self.radius or tree_mode != self.tree_mode
        self.routes, self.radius, self.tree_mode = routes, radius, tree_mode
        self._valid_origins = paths.ValidOrigins(self.my_id, self._graph, routes)
        self._dirty = True
        return changed

    def refresh(self) -> bool:
        """Compute the trees a change left pending; True if the valid origins or the trees
        changed (valid origins are new after every recompute: computed as asked)."""
        if not self._dirty or self._graph is None:
            return False
        self._dirty = False
        trees: MulticastTrees | None = None
        if self.tree_mode:
            graph = multicast_trees.build_graph(self._collection)
            tree_routes = multicast_trees.compute_routes(self.my_id, graph)
            trees = MulticastTrees({d: r.next_hop for d, r in tree_routes.items()},
                                   multicast_trees.compute_valid_origins(self.my_id, graph, tree_routes))
        self._trees = trees
        return True

    def valid_origins(self) -> paths.ValidOrigins:
        return self._valid_origins

    def trees(self) -> MulticastTrees | None:
        """The multicast trees, or None while the flooding rule is in force."""
        return self._trees
