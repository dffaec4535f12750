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

from qdrouter.protocol.control_routes import ControlRoutes
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
from qdrouter.protocol.multicast_rules import TREE_SCHEME, MulticastTrees
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
        self._routes = ControlRoutes(my_id, self._neighbors, self._lsdb, self._paths, self.multicast_trees)

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

    def on_message(self, opcode: object, body: object, conn_key: Hashable | None,
                   now: float) -> List[Outbound]:
        """Handle one control message, as decoded off the wire (``decode`` validates it:
        anything may arrive).  conn_key: the connection it arrived on (HELLO needs it)."""
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
        """Where a control message for ``address`` that entered the network at ``origin`` goes
        (protocol/control_routes.py)."""
        return self._routes.forward_targets(address, origin, trace)

    def peers_of(self, router_id: str) -> List[str]:
        """The routers ``router_id``'s link state lists as its peers (sorted; none when its
        link state is unknown here)."""
        node = self._lsdb.routers.get(router_id)
        return sorted(node.link_state.peers) if node is not None else []

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
        changed = self._routes.recompute_if_needed()
        if changed is None:
            return
        if changed:
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

    def _unicast(self, address: str, body: Dict[str, Any], opcode: str, router_id: str) -> Outbound:
        return Outbound(address, body, opcode, via=self._routes.conn_towards(router_id))

    def _emit(self, kind: str, data: Any) -> None:
        if self.on_event is not None:
            self.on_event(RoutingEvent(kind, data))
