"""RoutingEngine: the routing protocol driven by its caller (no I/O, no clock, no threads).

The caller (the router's I/O layer) must:
* call ``tick(now)`` about once a second and send what it returns;
* hand every control message received to ``on_message(opcode, body, conn_key, now)`` (opcode
  from the 'opcode' application property) and send what it returns;
* report inter-router connections with ``neighbor_link_up/down``;
* send each ``Outbound`` with application properties ``{'opcode': out.opcode}``: on
  connection ``out.via`` when set, else as routed by ``forward_targets(out.address, my_id)``;
  messages arriving for ``_topo/...`` addresses are routed the same way (with the ingress
  router as origin) and handed to ``on_message`` when ``local`` is True.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Dict, FrozenSet, Hashable, List, Set, Tuple

from qdrouter.protocol.link_state import LinkStateDatabase
from qdrouter.protocol.messages import (
    ControlMessage,
    Hello,
    IncompatibleVersion,
    LinkStateRequest,
    LinkStateUpdate,
    MobileAddressRequest,
    MobileAddressUpdate,
    ProtocolError,
    RouterAdvertisement,
    decode,
)
from qdrouter.protocol.mobile import (
    TREATMENT_ANYCAST_BALANCED,
    TREATMENT_LINK_BALANCED,
    MobileAddressSync,
    decode_address,
    encode_core_key,
)
from qdrouter.protocol.multicast_rules import TREE_SCHEME, MulticastTrees, flood_next_hops, tree_next_hops
from qdrouter.protocol.neighbors import NeighborChange, NeighborTable
from qdrouter.protocol.outbound import (
    HELLO_ADDRESS,
    Delivery,
    Outbound,
    RoutingEvent,
    router_address,
    router_ma_address,
)
from qdrouter.protocol.path_state import PathState
from qdrouter.protocol.paths import ValidOrigins


@dataclass
class _Counters:
    received: Dict[str, int] = field(default_factory=dict)
    errors: int = 0
    incompatible: Set[str] = field(default_factory=set)
    route_changes: int = 0  # times the routing table changed (a topology change seen here)


class RoutingEngine:
    def __init__(self, my_id: str, area: str = "0", *, hello_interval: float = 1.0,
                 hello_max_age: float = 3.0,
                 ra_interval: float = 30.0, ra_interval_flux: float = 4.0, remote_ls_max_age: float = 60.0,
                 instance: int = 0, on_event: Callable[[RoutingEvent], None] | None = None) -> None:
        self.my_id = my_id
        self.area = area
        # Upstream uses the boot time in seconds; a restarted router is recognised by it.
        self.instance = instance
        self.hello_interval = hello_interval
        self.on_event = on_event
        self.counters = _Counters()
        self._neighbors = NeighborTable(my_id, instance, hello_max_age)
        self._lsdb = LinkStateDatabase(my_id, area, ra_interval, ra_interval_flux, remote_ls_max_age,
                                       TREE_SCHEME)
        self._mobile = MobileAddressSync(my_id, area)
        self._paths = PathState(my_id)
        self._last_hello: float | None = None
        self._pending_mar: Dict[str, MobileAddressRequest] = {}

    # -- caller entry points ------------------------------------------------------------

    def neighbor_link_up(self, conn_key: Hashable, cost: int = 1) -> List[Outbound]:
        self._apply_neighbor_changes(self._neighbors.link_up(conn_key, cost))
        # Greet at once so discovery does not wait for the next hello interval.
        return [self._hello(conn_key)]

    def neighbor_link_down(self, conn_key: Hashable) -> None:
        self._apply_neighbor_changes(self._neighbors.link_down(conn_key))

    def local_address_added(self, address: str, hint: int = TREATMENT_ANYCAST_BALANCED) -> None:
        """A local consumer for a mobile address (a core key: plain, or phased for a
        waypoint) appeared; announced on the next tick."""
        self._mobile.add_local(encode_core_key(address), hint)

    def local_address_removed(self, address: str) -> None:
        self._mobile.remove_local(encode_core_key(address))

    def local_link_route_added(self, key: str) -> None:
        """A link-route destination (upstream hash key "C<prefix>", "F<pattern>"...) is
        reachable through this router."""
        self._mobile.add_local(key, TREATMENT_LINK_BALANCED)

    def local_link_route_removed(self, key: str) -> None:
        self._mobile.remove_local(key)

    def withdraw(self) -> None:
        """Leave gracefully: an empty link state and no addresses advertised (own routes stay)."""
        self._lsdb.withdraw()
        self._mobile.withdraw()

    def tick(self, now: float) -> List[Outbound]:
        out: List[Outbound] = []
        self._apply_neighbor_changes(self._neighbors.expire(now))
        if self._last_hello is None or now - self._last_hello >= self.hello_interval:
            self._last_hello = now
            out.extend(self._hello(conn) for conn in self._neighbors.connections())
        # Differential MAU first, then the RA that carries the new mobile_seq (upstream order),
        # so routers that got the MAU do not send a needless MAR.
        mau = self._mobile.flush()
        if mau is not None:
            out.append(Outbound(router_ma_address("all", self.area), mau.to_dict(), mau.OPCODE))
        result = self._lsdb.tick(now, set(self._paths.routes))
        for rid in result.restarted + result.forgotten:
            self._pending_mar.pop(rid, None)
            if self._mobile.forget(rid):
                self._emit("addresses", self.remote_addresses())
        self._recompute_if_needed()
        for rid, mar in self._mobile.overdue_requests(now).items():
            self._pending_mar.setdefault(rid, mar)
        if result.my_ls_changed:
            # Flood the new link state itself, not only the RA announcing it. A router that
            # learns of it from the RA must ask with an LSR routed by its own table, and while
            # that table is stale (it predates this very change) the LSR can loop between
            # routers that disagree and never arrive. qdrouterd accepts unsolicited LSUs.
            lsu = self._lsdb.own_update(self.instance)
            out.append(Outbound(router_address("all", self.area), lsu.to_dict(), lsu.OPCODE))
        if result.send_ra or mau is not None:
            ra = self._lsdb.advertisement(self._mobile.mobile_seq, self.instance)
            out.append(Outbound(router_address("all", self.area), ra.to_dict(), ra.OPCODE))
        for rid in result.lsr_to:
            out.extend(self._lsr(rid))
        self._refresh_paths()
        out.extend(self._after_change())
        return out

    def on_message(self, opcode: Any, body: Any, conn_key: Hashable | None, now: float) -> List[Outbound]:
        """Handle one control message.  conn_key: the connection it arrived on (HELLO needs it)."""
        try:
            msg = decode(opcode, body)
        except IncompatibleVersion as exc:
            self.counters.incompatible.add(exc.router_id)  # upstream logs these once and ignores
            return []
        except ProtocolError as exc:
            self.counters.errors += 1
            self._emit("error", str(exc))
            return []
        self.counters.received[msg.OPCODE] = self.counters.received.get(msg.OPCODE, 0) + 1
        out = self._dispatch(msg, conn_key, now)
        out.extend(self._after_change())
        return out

    # -- observable state ---------------------------------------------------------------

    def routing_table(self) -> Dict[str, Tuple[str, int]]:
        """{router_id: (next_hop_id, cost)} for every reachable remote router."""
        return {rid: (r.next_hop, r.cost) for rid, r in self._paths.routes.items()}

    def valid_origins(self) -> Dict[str, FrozenSet[str]]:
        """qdrouterd's valid origins (protocol/paths.py), all of them: destination -> origins."""
        return dict(self.origin_checks().table())

    def origin_checks(self) -> ValidOrigins:
        """The valid origins as forwarding asks about them (one origin at a time)."""
        self._refresh_paths()
        return self._paths.valid_origins()

    def _refresh_paths(self) -> None:
        if self._paths.refresh():
            self._emit("valid_origins", None)

    @property
    def radius(self) -> int:
        """Hops to the farthest reachable router (qdrouterd's topology radius)."""
        return self._paths.radius

    def multicast_trees(self) -> MulticastTrees | None:
        """The trees multicast follows while every reachable router shares them, else None
        (qdrouterd's flooding rule applies: protocol/multicast_rules.py)."""
        self._refresh_paths()
        return self._paths.trees()

    def remote_addresses(self) -> Dict[str, Set[str]]:
        """{address: routers with a consumer}; phase-0 mobile keys decoded to plain addresses."""
        return {decode_address(k): v for k, v in self._mobile.remote_keys().items()}

    def remote_hints(self) -> Dict[str, int]:
        """{address: treatment hint of a router that announced it} (keys as remote_addresses)."""
        return {decode_address(k): v for k, v in self._mobile.remote_hints().items()}

    def neighbors(self) -> Dict[str, Hashable]:
        return {rid: conn for rid, (conn, _) in self._neighbors.neighbors().items()}

    def neighbors_through(self, conn_key: Hashable) -> List[str]:
        """Routers that are two-way neighbours on the connection ``conn_key``."""
        return self._neighbors.two_way_through(conn_key)

    def link_state(self) -> Dict[str, Any]:
        return self._lsdb.my_ls.to_dict()

    @property
    def duplicate_id_detected(self) -> bool:
        return self._neighbors.duplicate_id_detected

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
            trees = self.multicast_trees()
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
            if parts[-1] == "qdrouter.ma":
                conns = [conn for conn in conns if self._routes_back_through(conn)]
            return Delivery(local=origin != self.my_id, conns=tuple(conns))
        if target == self.my_id:
            return Delivery(local=True)
        conn = self._conn_towards(target)
        return Delivery(local=False, conns=(conn,) if conn is not None else ())

    # -- internals ----------------------------------------------------------------------

    def _dispatch(self, msg: ControlMessage, conn_key: Hashable | None, now: float) -> List[Outbound]:
        out: List[Outbound] = []
        if isinstance(msg, Hello):
            if conn_key is not None:
                self._apply_neighbor_changes(self._neighbors.on_hello(conn_key, msg, now))
                if self._neighbors.duplicate_id_detected:
                    self._emit("duplicate_id", msg.id)
        elif isinstance(msg, RouterAdvertisement):
            if msg.id != self.my_id:
                self._lsdb.on_ra(msg, now, via=conn_key)
                self._forget_restarted()
                mar = self._mobile.on_ra(msg.id, msg.mobile_seq, now)
                if mar is not None:
                    self._pending_mar[msg.id] = mar
        elif isinstance(msg, LinkStateUpdate):
            self._lsdb.on_lsu(msg, now)
            self._forget_restarted()
        elif isinstance(msg, LinkStateRequest):
            if msg.id != self.my_id:
                lsu = self._lsdb.answer_lsr(msg.id, self.instance)
                address = router_address(msg.id, self.area)
                out.append(self._unicast(address, lsu.to_dict(), lsu.OPCODE, msg.id))
                # Also back the way the request came (a path that works), for the reason
                # _lsr gives.
                if conn_key is not None and conn_key != out[-1].via \
                        and conn_key in self._neighbors.connections():
                    out.append(Outbound(address, lsu.to_dict(), lsu.OPCODE, via=conn_key))
        elif isinstance(msg, MobileAddressUpdate):
            # Like mobile.c: a MAU from a router we do not track yet is dropped; its RA will
            # make us ask (MAR) once it is known.
            if msg.id in self._lsdb.routers:
                changed, mar = self._mobile.on_mau(msg, now)
                if mar is not None:
                    self._pending_mar[msg.id] = mar
                if changed:
                    self._emit("addresses", self.remote_addresses())
        elif isinstance(msg, MobileAddressRequest):
            reply = self._mobile.on_mar(msg)
            if reply is not None:
                out.append(self._unicast(router_ma_address(msg.id, self.area), reply.to_dict(), reply.OPCODE,
                                         msg.id))
        return out

    def _forget_restarted(self) -> None:
        # A restarted router's addresses are void; drop them now rather than at the next tick.
        for rid in self._lsdb.take_restarted():
            self._pending_mar.pop(rid, None)
            if self._mobile.forget(rid):
                self._emit("addresses", self.remote_addresses())

    def _after_change(self) -> List[Outbound]:
        """Recompute routes if the topology moved, then send requests that became routable."""
        self._recompute_if_needed()
        routes = self._paths.routes
        out = [lsr for rid in self._lsdb.take_ls_requests(set(routes)) for lsr in self._lsr(rid)]
        for rid in [r for r in self._pending_mar if r in routes]:
            mar = self._pending_mar.pop(rid)
            out.append(self._unicast(router_ma_address(rid, self.area), mar.to_dict(), mar.OPCODE, rid))
        return out

    def _recompute_if_needed(self) -> None:
        if not self._lsdb.topology_changed:
            return
        self._lsdb.topology_changed = False
        # Routes are cheap (one Dijkstra) and are needed at once to route LSRs; the valid
        # origins (one search per origin) are computed lazily or on the next tick.
        routers = self._lsdb.routers

        def scheme_of(rid: str) -> int:
            node = routers.get(rid)
            return node.multicast_scheme if node is not None else 0

        old_routes = self._paths.routes
        if self._paths.recompute(self._lsdb.collection(), scheme_of, TREE_SCHEME):
            # A router that just became reachable may have changed while it was cut off from
            # us (a partition healing, a restart nearby): ask it for its current link state
            # instead of trusting what we held, or waiting for its next advertisement.
            for rid in self._paths.routes.keys() - old_routes.keys():
                node = routers.get(rid)
                if node is not None:
                    node.need_ls_request = True
            if self._paths.routes != old_routes:
                self.counters.route_changes += 1
            self._emit("routes", self.routing_table())

    def _apply_neighbor_changes(self, changes: List[NeighborChange]) -> None:
        for change in changes:
            if change.up:
                self._lsdb.set_peer(change.router_id, change.cost)
                self._emit("neighbor_up", (change.router_id, change.conn_key))
            else:
                self._lsdb.remove_peer(change.router_id)
                self._emit("neighbor_down", (change.router_id, change.conn_key))

    def _hello(self, conn_key: Hashable) -> Outbound:
        hello = self._neighbors.hello_for(conn_key)
        return Outbound(HELLO_ADDRESS, hello.to_dict(), hello.OPCODE, via=conn_key)

    def _lsr(self, router_id: str) -> List[Outbound]:
        """An LSR along our route to the router and, if different, back along the connection
        its last advertisement arrived on: that path demonstrably exists, while our route may
        be built from the stale link states the answer is meant to replace."""
        lsr = LinkStateRequest(self.my_id, self.area)
        address = router_address(router_id, self.area)
        out = [self._unicast(address, lsr.to_dict(), lsr.OPCODE, router_id)]
        node = self._lsdb.routers.get(router_id)
        via = node.heard_via if node is not None else None
        if via is not None and via != out[0].via and via in self._neighbors.connections():
            out.append(Outbound(address, lsr.to_dict(), lsr.OPCODE, via=via))
        return out

    def _conn_towards(self, router_id: str) -> Hashable | None:
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

    def _routes_back_through(self, conn: Hashable) -> bool:
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

    def _unicast(self, address: str, body: Dict[str, Any], opcode: str, router_id: str) -> Outbound:
        return Outbound(address, body, opcode, via=self._conn_towards(router_id))

    def _emit(self, kind: str, data: Any) -> None:
        if self.on_event is not None:
            self.on_event(RoutingEvent(kind, data))
