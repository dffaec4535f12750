"""A router in `mode: interior`: the routing protocol (protocol/) wired to the router's
links (amqp/) and forwarding (core/). Control messages travel on the qd.router links of
inter-router connections; what the protocol learns becomes MeshRoutes and the addresses'
remote consumers."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, Hashable, List, Set

from ..amqp.bindings.proton_ffi import ffi, lib
from ..amqp.codec import MessageFormatError, decode_message
from ..amqp.codec.control_wire import encode_control
from ..amqp.codec.message_sections import find_sections
from ..amqp.codec.router_annotations import rewrite_annotations
from ..amqp.links.endpoint_listener import EndpointListener
from ..amqp.loop.server import AmqpServer
from ..control_counters import ControlCounters
from ..core.address_events import AddressListener
from ..core.address_table import BALANCED, CLOSEST, MULTICAST, AddressTable
from ..core.link_route_table import LinkRoute, LinkRouteTable
from ..core.links import CONTROL, DATA, CoreLink
from ..core.mesh_routes import MeshRoutes
from ..protocol.engine import RoutingEngine
from ..protocol.mobile import (
    LINK_ROUTE_KEY_PREFIXES,
    TREATMENT_ANYCAST_BALANCED,
    TREATMENT_ANYCAST_CLOSEST,
    TREATMENT_MULTICAST_FLOOD,
    TREATMENT_MULTICAST_ONCE,
)
from ..protocol.outbound import Outbound, RoutingEvent

log = logging.getLogger("qdrouter.ROUTER_HELLO")
# Every control message in and out (except HELLO), at debug: `log { module: ROUTER_LS enable: debug+ }`.
ls_log = logging.getLogger("qdrouter.ROUTER_LS")
TICK_S = 0.25
TRACE_KEY = "x-opt-qd.trace"
INGRESS_KEY = "x-opt-qd.ingress"
# Upstream's treatment codes for the distributions (qd_address_treatment_t).
TREATMENT_HINTS = {MULTICAST: TREATMENT_MULTICAST_ONCE, CLOSEST: TREATMENT_ANYCAST_CLOSEST,
                   BALANCED: TREATMENT_ANYCAST_BALANCED}
# A remote router's hint as the distribution of an address this router has no prefix for
# (mobile.c's qcm_mobile_sync_default_treatment; flood is multicast here).
HINT_DISTRIBUTIONS = {TREATMENT_MULTICAST_FLOOD: MULTICAST, TREATMENT_MULTICAST_ONCE: MULTICAST,
                      TREATMENT_ANYCAST_CLOSEST: CLOSEST, TREATMENT_ANYCAST_BALANCED: BALANCED}


class Peer:
    """One inter-router connection and its links."""

    __slots__ = ("connection", "control_out", "cost", "data_out", "up")

    def __init__(self, connection: Any, cost: int) -> None:
        self.connection = connection
        self.cost = cost
        self.control_out: CoreLink | None = None
        self.data_out: CoreLink | None = None
        self.up = False


class MeshNode(EndpointListener, AddressListener):
    def __init__(self, router_id: str, server: AmqpServer, table: AddressTable,
                 timers: Dict[str, float], *, link_routes: LinkRouteTable | None = None,
                 link_route_connected: Callable[[LinkRoute], bool] = lambda route: False) -> None:
        self.router_id = router_id
        self.server = server
        self.table = table
        self.engine = RoutingEngine(
            router_id,
            hello_interval=timers.get("helloIntervalSeconds", 1.0),
            hello_max_age=timers.get("helloMaxAgeSeconds", 3.0),
            ra_interval=timers.get("raIntervalSeconds", 30.0),
            ra_interval_flux=timers.get("raIntervalFluxSeconds", 4.0),
            remote_ls_max_age=timers.get("remoteLsMaxAgeSeconds", 60.0),
            instance=int(time.time()),
            on_event=self._on_event,
        )
        self.routes = MeshRoutes(router_id)
        adaptor = server.adaptor
        self.forwarder = adaptor.forwarder
        self.forwarder.mesh = self.routes
        self.forwarder.add_address_listener(self)
        adaptor.receive_control_with(self)
        server.endpoints.add_listener(self)
        self.peers: Dict[Hashable, Peer] = {}
        # Link routes: the keys of destinations connected here (link_route_connected) are
        # advertised to the mesh, those other routers advertise steer attaches.
        self.link_routes = link_routes
        self.link_route_connected = link_route_connected
        self._advertised_link_routes: Set[str] = set()
        self._trace_id = f"0/{router_id}"
        self.control_loops_dropped = 0
        # What the protocol received and sent, for qdstat -a's protocol rows.
        self.control_counts = ControlCounters(router_id)
        self._neighbor_peer: Dict[str, int] = {}
        self._tag = 0
        # Control messages go pre-settled, so one tag serves them all.
        self._tag_buffer = ffi.new("char[]", b"c")
        self._tag_value = ffi.new("pn_bytes_t *", (1, self._tag_buffer))[0]
        server.timers.call_later(TICK_S, self._tick)

    # ---- connections and links -----------------------------------------------------------
    def connector_opened(self, connection: Any) -> None:
        self.server.endpoints.open_inter_router(connection)

    def reachable_through(self, connection: Any) -> bool:
        """The router at the other end is a two-way neighbour through this connection, with a
        data link to it (a replacement connection may take over: amqp/connections/tls_rotation.py)."""
        peer = self.peers.get(connection.identity)
        return (peer is not None and peer.up and peer.data_out is not None
                and bool(self.engine.neighbors_through(connection.identity)))

    def _peer(self, connection: Any) -> Peer:
        peer = self.peers.get(connection.identity)
        if peer is None:
            # The larger of the two ends' costs, as qdrouterd does.
            peer = Peer(connection, max(connection.settings.cost, connection.remote_cost or 1))
            self.peers[connection.identity] = peer
        return peer

    def inter_router_link_attached(self, link: CoreLink) -> None:
        peer = self._peer(link.connection)
        if link.incoming:
            return
        if link.kind == CONTROL:
            peer.control_out = link
        elif link.kind == DATA:
            peer.data_out = link
            self._refresh_data_links()
        if peer.control_out is not None and not peer.up:
            peer.up = True
            self._send_all(self.engine.neighbor_link_up(link.connection.identity, peer.cost))

    def inter_router_link_lost(self, link: CoreLink) -> None:
        peer = self.peers.get(getattr(link.connection, "identity", -1))
        if peer is None or link.incoming:
            return
        if link is peer.data_out:
            peer.data_out = None
        if link is peer.control_out:
            peer.control_out = None
            if peer.up:
                peer.up = False
                self.engine.neighbor_link_down(link.connection.identity)
            del self.peers[link.connection.identity]
        self._refresh_data_links()

    def withdraw(self) -> int:
        """Leave the network gracefully (a drain): an empty link state and no addresses, told
        every neighbour now; the inter-router connections stay up for what is in flight.
        Returns the number of neighbours told."""
        self.engine.withdraw()
        self._send_all(self.engine.tick(time.monotonic()))
        return len(self.engine.neighbors())

    # ---- protocol traffic --------------------------------------------------------------
    def _tick(self) -> None:
        try:
            now = time.monotonic()
            self._advertise_link_routes()
            self._send_all(self.engine.tick(now))
            self.forwarder.sweep_held(now)
        finally:
            self.server.timers.call_later(TICK_S, self._tick)

    def control_message(self, link: CoreLink, raw: bytes) -> None:
        """A routing-protocol message from a neighbour (amqp/data_path/seams.py's ControlReceiver)."""
        try:
            message = decode_message(raw)
        except MessageFormatError as error:  # a peer's garbage must not stop the router
            log.info("Undecodable control message from connection %s: %s", link.connection.identity, error)
            return
        # qdrouterd's application-property keys are symbols: the codec gives them as str
        # subclasses, so looking them up by their text works for both routers' messages.
        properties: Dict[Any, Any] = message.application_properties or {}
        opcode = properties.get("opcode")
        body = message.body
        address = message.to if isinstance(message.to, str) else ""
        origin = body.get("id") if isinstance(body, dict) else None
        conn_key = link.connection.identity
        annotations: Dict[Any, Any] = message.annotations or {}
        trace = annotations.get(TRACE_KEY)
        trace = list(trace) if isinstance(trace, list) else list(getattr(trace, "elements", ()))
        if opcode != "HELLO" and ls_log.isEnabledFor(logging.DEBUG):
            ls_log.debug("RCVD %s on conn %s to %s trace %s: %s", opcode, conn_key, address, trace, body)
        if not address.startswith("_local/"):
            # While link states disagree, valid origins can send a flooded message round a
            # loop; the trace stops it here as upstream's forwarder does for every message.
            if self._trace_id in trace or self.routes.beyond_radius(trace):
                self.control_loops_dropped += 1
                return
            passed = [hop[2:] if hop.startswith("0/") else hop for hop in trace if isinstance(hop, str)]
            targets = self.engine.forward_targets(address, str(origin) if origin else self.router_id, passed)
            forward = [key for key in targets.conns if key != conn_key]
            if forward:
                # This router's id spliced into the trace; every other byte travels as it came
                # (a C router's symbol keys stay symbols).
                try:
                    ma_start, ma_end, _ = find_sections(raw)
                    encoded = rewrite_annotations(
                        raw, ma_start, ma_end, strip_qd=False, keep_to_override=True, ingress=None,
                        trace_append=self._trace_id, trace_create=True)
                except MessageFormatError as error:
                    log.info("Control message from connection %s not forwarded: %s", conn_key, error)
                    return
                for key in forward:
                    self._send_raw(key, encoded)
            if not targets.local:
                return
        self.control_counts.received(address)
        self._send_all(self.engine.on_message(opcode, body, conn_key, time.monotonic()))

    def _send_all(self, outbound: List[Outbound]) -> None:
        for out in outbound:
            if out.opcode != "HELLO" and ls_log.isEnabledFor(logging.DEBUG):
                ls_log.debug("SENT %s to %s via %s: %s", out.opcode, out.address, out.via, out.body)
            annotations = {INGRESS_KEY: self._trace_id, TRACE_KEY: [self._trace_id]}
            encoded = encode_control(out.address, out.opcode, out.body, annotations)
            self.control_counts.sent(out.address)
            if out.via is not None:
                self._send_raw(out.via, encoded)
                continue
            for key in self.engine.forward_targets(out.address, self.router_id).conns:
                self._send_raw(key, encoded)

    def _send_raw(self, conn_key: Hashable, encoded: bytes) -> None:
        peer = self.peers.get(conn_key)
        if peer is None or peer.control_out is None or peer.control_out.handle is None:
            ls_log.debug("control message for conn %s not sent: no control link", conn_key)
            return
        handle = peer.control_out.handle
        delivery = lib.pn_delivery(handle, self._tag_value)
        lib.pn_link_send(handle, encoded, len(encoded))
        lib.pn_link_advance(handle)
        lib.pn_delivery_settle(delivery)
        self.server.adaptor.dirty.add(peer.connection)

    # ---- what the protocol learned -----------------------------------------------------
    def _on_event(self, event: RoutingEvent) -> None:
        if event.kind in ("neighbor_up", "neighbor_down"):
            # When a neighbour was found or lost, to the microsecond (what the partition test
            # measures detection by, and what an operator looks for after a failure).
            router_id, conn_key = event.data
            log.info("Neighbour %s %s (connection %s)", router_id,
                     "up" if event.kind == "neighbor_up" else "lost", conn_key)
        if event.kind in ("routes", "neighbor_up", "neighbor_down"):
            self._refresh_data_links()
            if event.kind != "neighbor_down":
                log.info("Routes of %s: %s", self.router_id, self.engine.routing_table())
        elif event.kind == "valid_origins":
            self._refresh_multicast()
        elif event.kind == "addresses":
            self._apply_addresses(event.data)
        elif event.kind == "duplicate_id":
            log.error("Another router uses this router's id %r", self.router_id)

    def _refresh_data_links(self) -> None:
        links = {}
        for router_id, conn_key in self.engine.neighbors().items():
            peer = self.peers.get(conn_key)
            if peer is not None and peer.data_out is not None:
                links[router_id] = peer.data_out
        self.routes.data_links = links
        self.routes.table = self.engine.routing_table()
        self._refresh_multicast()
        self.forwarder.topology_changed()

    def _refresh_multicast(self) -> None:
        """Valid origins, and the multicast rule with its radius (protocol/multicast_rules.py)."""
        self.routes.origin_valid = self.engine.origin_checks().includes
        trees = self.engine.multicast_trees()
        self.routes.trees = trees
        self.routes.radius = None if trees is not None else self.engine.radius

    def _apply_addresses(self, remote: Dict[str, Any]) -> None:
        link_route_keys = {key: set(routers) for key, routers in remote.items()
                           if key[:1] in LINK_ROUTE_KEY_PREFIXES}
        if self.link_routes is not None:
            self.link_routes.set_remote(link_route_keys)
        remote = {key: routers for key, routers in remote.items() if key not in link_route_keys}
        for address in self.table:
            routers = remote.get(address.key)
            new = sorted(routers) if routers else []
            if new != address.remote:
                address.remote = new
                self.forwarder.remote_consumers_changed(address)
        hints: Dict[str, int] | None = None
        for key, routers in remote.items():
            if self.table.find(str(key)) is None and routers:
                # As qdrouterd: an address first learned from another router takes this
                # router's prefix configuration, or failing that the advertiser's hint.
                hints = self.engine.remote_hints() if hints is None else hints
                address = self.table.get(key, HINT_DISTRIBUTIONS.get(hints.get(key, -1), BALANCED))
                address.remote = sorted(routers)
                self.forwarder.remote_consumers_changed(address)

    def local_address(self, key: str, added: bool) -> None:
        """A mobile address here gained its first consumer or lost its last: the mesh hears."""
        if added:
            # The MAU's hint is the address's treatment, as qdrouterd sends it: a router
            # without a prefix for the address treats it as hinted.
            address = self.table.find(key)
            distribution = address.distribution if address is not None else self.table.distribution_for(key)
            hint = TREATMENT_HINTS.get(distribution, TREATMENT_ANYCAST_BALANCED)
            self.engine.local_address_added(key, hint)
        else:
            self.engine.local_address_removed(key)

    # ---- link routes across the mesh ---------------------------------------------------
    def _advertise_link_routes(self) -> None:
        if self.link_routes is None:
            return
        active = self.link_routes.active_keys(self.link_route_connected)
        for key in active - self._advertised_link_routes:
            self.engine.local_link_route_added(key)
        for key in self._advertised_link_routes - active:
            self.engine.local_link_route_removed(key)
        self._advertised_link_routes = active

    def link_route_hop(self, routers: Set[str], arrived_on: Any) -> Any:
        """The inter-router connection toward the nearest router with a destination (never
        back where the attach came from), or None."""
        table = self.engine.routing_table()
        neighbors = self.engine.neighbors()
        best = None
        for router_id in routers:
            route = table.get(router_id)
            if route is None:
                continue
            peer = self.peers.get(neighbors.get(route[0], -1))
            if peer is None or peer.connection is arrived_on or not peer.up:
                continue
            if best is None or (route[1], router_id) < best[0]:
                best = ((route[1], router_id), peer.connection)
        return best[1] if best is not None else None

    # ---- management --------------------------------------------------------------------
    def neighbour_ids(self) -> List[str]:
        """The routers this one has a direct inter-router connection to (HELLOs both ways)."""
        return sorted(self.engine.neighbors())

    def node_rows(self) -> List[Dict[str, Any]]:
        table = self.engine.routing_table()
        neighbors = self.engine.neighbors()
        # qdrouterd lists the router itself first (its qdstat -n and --all-routers rely on it).
        rows: List[Dict[str, Any]] = [{
            "identity": self.router_id, "name": f"router.node/{self.router_id}",
            "type": "org.apache.qpid.dispatch.router.node", "id": self.router_id,
            "protocolVersion": 1, "instance": None, "linkState": sorted(neighbors),
            "nextHop": "(self)", "validOrigins": [], "address": f"amqp:/_topo/0/{self.router_id}",
            "routerLink": None, "cost": None, "lastTopoChange": None, "index": 0,
        }]
        for router_id, (next_hop, cost) in sorted(table.items()):
            # A neighbour's routerLink is the identity of our control link to it (qdstat -l).
            peer = self.peers.get(neighbors.get(router_id, -1))
            control = peer.control_out if peer is not None else None
            rows.append({
                "identity": router_id,
                "name": f"router.node/{router_id}",
                "type": "org.apache.qpid.dispatch.router.node",
                "id": router_id,
                "protocolVersion": 1,
                "instance": None,
                "linkState": self.engine.peers_of(router_id),
                # qdrouterd shows no next hop for a router reached directly.
                "nextHop": None if next_hop == router_id else next_hop,
                "validOrigins": sorted(self.engine.origin_checks().table().get(router_id, ())),
                "address": f"amqp:/_topo/0/{router_id}",
                "routerLink": control.identity if control is not None else None,
                "cost": cost,
                "lastTopoChange": None,
            })
        return rows
