"""Where the routing protocol's own messages go (``forward_targets``), and the routes they
follow, recomputed when the topology moves. The RoutingEngine (protocol/engine.py) builds one
over its neighbour table, link-state database and path state, and asks it through these
named calls, as qdrouterd's routing engine does its sub-engines."""

from __future__ import annotations

from typing import Callable, Collection, Hashable, List

from qdrouter.protocol.link_state import LinkStateDatabase
from qdrouter.protocol.multicast_rules import TREE_SCHEME, MulticastTrees, flood_next_hops, tree_next_hops
from qdrouter.protocol.neighbors import NeighborTable
from qdrouter.protocol.outbound import Delivery
from qdrouter.protocol.path_state import PathState


class ControlRoutes:
    def __init__(self, my_id: str, neighbors: NeighborTable, lsdb: LinkStateDatabase, paths: PathState,
                 multicast_trees: Callable[[], MulticastTrees | None]) -> None:
        self.my_id = my_id
        self._neighbors = neighbors
        self._lsdb = lsdb
        self._paths = paths
        # The engine's: refreshes the paths (and tells of new valid origins) first.
        self._multicast_trees = multicast_trees

    def forward_targets(self, address: str, origin: str, trace: Collection[str] = ()) -> Delivery:
        """Where a control message for ``address`` that entered the network at ``origin`` goes.

        _local/...: here only.  _topo/<area>/<id>/...: here if id is me, else the next hop.
        _topo/<area>/all/...: here (unless I sent it) plus copies by the multicast rule in
        force (protocol/multicast_rules.py; ``trace``: the routers the message passed).
        """
        if address.startswith("amqp:/"):
            address = address[len("amqp:/"):]
        parts = address.split("/")
        if parts[0] == "_local":
            return Delivery(local=True)
        if parts[0] != "_topo" or len(parts) < 4:
            return Delivery(local=False)
        target = parts[2]
        if target == "all":
            conns = self._copies_to_all(origin, trace)
            if parts[-1] == "qdrouter.ma":
                conns = [conn for conn in conns if self.routes_back_through(conn)]
            return Delivery(local=origin != self.my_id, conns=tuple(conns))
        if target == self.my_id:
            return Delivery(local=True)
        conn = self.conn_towards(target)
        return Delivery(local=False, conns=(conn,) if conn is not None else ())

    def _copies_to_all(self, origin: str, trace: Collection[str]) -> List[Hashable]:
        """The connections a `_topo/<area>/all/...` message from ``origin`` is copied to."""
        trees = self._multicast_trees()
        routes = self._paths.routes
        if trees is not None:
            hops = tree_next_hops(trees, routes, self.my_id, origin, trace)
        else:
            hops = flood_next_hops(lambda d: routes[d].next_hop if d in routes else None,
                                   routes, self.my_id, trace)
        conns: List[Hashable] = []
        for hop in sorted(hops):
            conn = self._neighbors.conn_for(hop)
            if conn is not None and conn not in conns:
                conns.append(conn)
        if origin == self.my_id:
            # Our own advertisements always reach every neighbour, even before routes to
            # them exist (a path needs both ends' link states): otherwise an RA sent
            # while links come up is lost until the next periodic one.
            for conn in self._neighbors.connections():
                if conn not in conns:
                    conns.append(conn)
        return conns

    def conn_towards(self, router_id: str) -> Hashable | None:
        """The connection a message for ``router_id`` leaves on, if any."""
        route = self._paths.routes.get(router_id)
        if route is not None:
            return self._neighbors.conn_for(route.next_hop)
        conn = self._neighbors.conn_for(router_id)  # a neighbour before the first recompute
        if conn is None:
            # No path known: back along the way its last advertisement came, if that
            # connection still leads to a neighbour.
            node = self._lsdb.routers.get(router_id)
            via = node.heard_via if node is not None else None
            if via is not None and via in self._neighbors.connections():
                conn = via
        return conn

    def routes_back_through(self, conn: Hashable) -> bool:
        """Whether the neighbour on ``conn`` has announced, in a link state we hold, its link
        to us: mobile-address updates go only to such neighbours. qdrouterd binds an address
        to the advertising router as soon as the update arrives, grants its senders credit,
        and releases what it cannot route (fanout 0) until its next once-a-second path
        computation; it computes with us only once its link state lists us. A neighbour
        skipped here asks for the addresses (MAR) when our RA shows a newer mobile_seq."""
        for rid, (neighbour_conn, _cost) in self._neighbors.neighbors().items():
            if neighbour_conn == conn:
                node = self._lsdb.routers.get(rid)
                return node is not None and self.my_id in node.link_state.peers
        return False

    def recompute_if_needed(self) -> bool | None:
        """Recompute the routes if the topology moved: None when it did not, else whether
        the routing table changed."""
        lsdb = self._lsdb
        if not lsdb.topology_changed:
            return None
        lsdb.topology_changed = False
        # Routes are cheap (one Dijkstra) and are needed at once to route LSRs; the valid
        # origins (one search per origin) are computed lazily or on the next tick.
        routers = lsdb.routers

        def scheme_of(rid: str) -> int:
            node = routers.get(rid)
            return node.multicast_scheme if node is not None else 0

        paths = self._paths
        old_routes = paths.routes
        if not paths.recompute(lsdb.collection(), scheme_of, TREE_SCHEME):
            return None
        # A router that just became reachable may have changed while it was cut off from
        # us (a partition healing, a restart nearby): ask it for its current link state
        # instead of trusting what we held, or waiting for its next advertisement.
        for rid in paths.routes.keys() - old_routes.keys():
            node = routers.get(rid)
            if node is not None:
                node.need_ls_request = True
        return paths.routes != old_routes
