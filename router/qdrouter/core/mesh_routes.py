"""What the routing protocol decided, in the shape forwarding needs: for each known router,
the outgoing inter-router data link toward it and its cost, the valid origins balanced anycast
checks, the radius, and the rule multicast follows (protocol/multicast_rules.py)."""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Mapping, Sequence, Set, Tuple

from ..protocol.multicast_rules import MulticastTrees, beyond_radius, flood_next_hops, tree_next_hops
from .links import CoreLink

TOPO_PREFIX = "_topo/0/"


def topological_router(key: str) -> str | None:
    """The router named by a `_topo/0/<router>/<rest>` address, else None."""
    if not key.startswith(TOPO_PREFIX):
        return None
    router, _, _ = key[len(TOPO_PREFIX):].partition("/")
    return router or None


def is_mobile(key: str) -> bool:
    """Addresses that the mesh advertises (qdrouterd's mobile class)."""
    # Phased keys (waypoints) are advertised too, as upstream's "M<phase>" keys.
    return not (key.startswith("_local/") or key.startswith("_topo/") or key.startswith("$"))


class MeshRoutes:
    def __init__(self, my_id: str) -> None:
        self.my_id = my_id
        # router id -> (next-hop neighbor id, cost)
        self.table: Dict[str, Tuple[str, int]] = {}
        # neighbor router id -> our outgoing data link to it
        self.data_links: Dict[str, CoreLink] = {}
        # (destination, origin) -> whether origin's shortest path to destination passes
        # through us (qdrouterd's valid origins, protocol/paths.py ValidOrigins.includes)
        self.origin_valid: Callable[[str, str], bool] = _nowhere
        # The mesh's radius in hops, or None while multicast follows trees (no copy loops).
        self.radius: int | None = None
        # Multicast's trees while every router shares them, else None: qdrouterd's flooding.
        self.trees: MulticastTrees | None = None

    def update(self, table: Dict[str, Tuple[str, int]], valid_origins: Mapping[str, Iterable[str]]) -> None:
        self.table = dict(table)
        origins = {router: frozenset(found) for router, found in valid_origins.items()}
        self.origin_valid = lambda dest, origin: origin in origins.get(dest, ())

    def beyond_radius(self, trace: Sequence[str] | None) -> bool:
        """A copy qdrouterd would release on arrival: it passed more routers than the radius + 1."""
        return trace is not None and beyond_radius(len(trace), self.radius)

    def link_toward(self, router: str) -> CoreLink | None:
        entry = self.table.get(router)
        if entry is None:
            return None
        return self.data_links.get(entry[0])

    def link_avoiding(self, router: str, trace: Sequence[str] | None,
                      origin: str | None = None) -> CoreLink | None:
        """The data link toward ``router``, unless the message (its ``trace``) has already
        passed ``router`` or the neighbor that link leads to: never send a message back
        toward a router it has passed (qdrouterd's link exclusions). A router whose local
        consumers are busy would otherwise bounce a balanced message to a remote one
        through the router it came from. ``origin`` (balanced anycast: the router the
        message entered the mesh at): None too unless we are on origin's shortest path to
        ``router``, as qdrouterd's balanced forwarder checks; a router that is not would
        release it. Only while a router other than qdmesh may be on the way (no multicast
        trees): among qdmesh routers every next hop passes the message on."""
        entry = self.table.get(router)
        if entry is None:
            return None
        if trace and (router in trace or entry[0] in trace):
            return None
        if origin is not None and self.trees is None and origin != self.my_id and origin in self.table \
                and not self.origin_valid(router, origin):
            return None
        return self.data_links.get(entry[0])

    def _next_hop(self, router: str) -> str | None:
        entry = self.table.get(router)
        return entry[0] if entry is not None else None

    def cost(self, router: str) -> int:
        entry = self.table.get(router)
        return entry[1] if entry is not None else 1 << 30

    def multicast_links(self, routers: Iterable[str], origin: str, trace: Iterable[str]) -> Set[CoreLink]:
        """Neighbor links a multicast copy takes toward the routers in ``routers``, by the
        rule in force: along the trees (exactly one copy each), or qdrouterd's flooding."""
        seen = set(trace)
        if self.trees is not None:
            hops = tree_next_hops(self.trees, routers, self.my_id, origin, seen)
        else:
            hops = flood_next_hops(self._next_hop, routers, self.my_id, seen)
        links: Set[CoreLink] = set()
        for hop in hops:
            link = self.data_links.get(hop)
            if link is not None:
                links.add(link)
        return links


def _nowhere(destination: str, origin: str) -> bool:
    return False
