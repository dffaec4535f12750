"""What the routing protocol decided, in the shape forwarding needs: for each known router,
the outgoing inter-router data link toward it and its cost, and multicast's valid origins."""

from __future__ import annotations

from typing import Dict, Iterable, Sequence, Set, Tuple

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
        # destination router id -> origins whose multicast copies to it pass through us
        self.valid_origins: Dict[str, Set[str]] = {}

    def update(self, table: Dict[str, Tuple[str, int]], valid_origins: Dict[str, Set[str]]) -> None:
        self.table = dict(table)
        self.valid_origins = {router: set(origins) for router, origins in valid_origins.items()}

    def link_toward(self, router: str) -> CoreLink | None:
        entry = self.table.get(router)
        if entry is None:
            return None
        return self.data_links.get(entry[0])

    def link_avoiding(self, router: str, trace: Sequence[str] | None) -> CoreLink | None:
        """The data link toward ``router``, unless the message (its ``trace``) has already
        passed ``router`` or the neighbor that link leads to: never send a message back
        toward a router it has passed (qdrouterd's link exclusions). A router whose local
        consumers are busy would otherwise bounce a balanced message to a remote one
        through the router it came from."""
        entry = self.table.get(router)
        if entry is None:
            return None
        if trace and (router in trace or entry[0] in trace):
            return None
        return self.data_links.get(entry[0])

    def cost(self, router: str) -> int:
        entry = self.table.get(router)
        return entry[1] if entry is not None else 1 << 30

    def multicast_links(self, routers: Iterable[str], origin: str, trace: Iterable[str]) -> Set[CoreLink]:
        """Neighbor links a multicast copy must take so that every router in ``routers`` gets
        exactly one copy: only toward destinations for which ``origin`` is a valid origin
        here (we are on origin's shortest-path tree to them), never back along the trace."""
        seen = set(trace)
        links: Set[CoreLink] = set()
        for router in routers:
            if router == self.my_id or router in seen:
                continue
            if origin != self.my_id and origin not in self.valid_origins.get(router, ()):
                continue
            link = self.link_toward(router)
            if link is not None:
                links.add(link)
        return links
