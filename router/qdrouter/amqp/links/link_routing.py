"""Link routing (Qpid Dispatch 0.7 book, 2.4): an attach that matches a link route is passed to the container
on a link of the same name, and the two links are tied together: deliveries, dispositions,
settlement, credit, drain and detach (with its error) pass straight through."""

from __future__ import annotations

import itertools
import logging
from typing import Any, Callable, Dict, List, Set, Tuple

from ...core.link_route_table import LinkRoute, LinkRouteTable
from ..bindings.proton_ffi import LOCAL_CLOSED, c_string, ffi, lib, set_condition, terminus_address
from ..connections.connection import AmqpConnection
from ..data_path.deliveries import copy_disposition
from .capabilities import dynamic_node_address
from .routed_streams import RoutedStreams

log = logging.getLogger("qdrouter.ROUTER_CORE")

NO_ROUTE = "qd:no-route-to-dest"
ROUTE_CONTAINER = "route-container"


class RoutedLink:
    __slots__ = ("connection", "delivered", "deliveries", "identity", "incoming", "key", "peer", "pn_link",
                 "prefixes", "route_in")

    def __init__(self, pn_link: Any, connection: AmqpConnection, incoming: bool, identity: int = 0) -> None:
        self.identity = identity
        self.delivered = 0
        # Direction of the route this end belongs to: True for 'in' (messages toward the
        # container), the same on both ends of the pair.
        self.route_in = incoming
        self.pn_link = pn_link
        self.connection = connection
        # True when the router receives on this link (its peer end sends).
        self.incoming = incoming
        self.peer: RoutedLink | None = None
        # Our delivery on this link -> the matching delivery on the peer link.
        self.deliveries: Dict[Any, Any] = {}
        # The router.address key of the link route this link follows (Clr, Dlr, E..., F...),
        # whose row counts the route-container deliveries; None for a route only other routers
        # of the mesh have.
        self.key: str | None = None
        # On the container's end: the route's (addExternalPrefix, delExternalPrefix), undone
        # in the container's answer so the client sees the address it asked for (qdrouterd's
        # strip_prefix / insert_prefix).
        self.prefixes: Tuple[str | None, str | None] | None = None


# On interior routers: (routers advertising a destination, the connection the attach came in
# on) -> the inter-router connection toward the nearest of them.
MeshHop = Callable[[Set[str], AmqpConnection], "AmqpConnection | None"]


class LinkRouter:
    def __init__(self, table: LinkRouteTable, dirty: Any,
                 find_container: Callable[[LinkRoute], AmqpConnection | None], outbound: Any = None,
                 find_mesh_hop: MeshHop | None = None) -> None:
        self.table = table
        self.dirty = dirty
        self.find_container = find_container
        # Interior routers only (MeshHop).
        self.find_mesh_hop = find_mesh_hop
        self.routed: Dict[Any, RoutedLink] = {}
        # Management identities of routed links ("r1", "r2", ...: apart from core links' numbers).
        self._ids = itertools.count(1)
        # Deliveries routed links on route-container connections received (ingress) and sent
        # (egress) before they went: qdstat -g's Deliveries from / to Route Container.
        self.closed_route_container_ingress = 0
        self.closed_route_container_egress = 0
        # The same by link-route key: [ingress, egress] for router.address's rows.
        self.closed_route_container_by_key: Dict[str, List[int]] = {}
        self._sessions: Dict[int, Any] = {}
        # Per container connection: the names of the routed links attached on it (how many
        # of each). Two clients may name their links alike; one connection may not carry two
        # links of one name (its peer would close it: "link name already attached").
        self._link_names: Dict[int, Dict[str, int]] = {}
        self._buffer = bytearray(64 * 1024)
        self._pointer = ffi.from_buffer(self._buffer)
        # The router drains (amqp/loop/drain.py): no more credit to routed producers.
        self.credit_stopped = False
        # Large deliveries passed on as they arrive (amqp/links/routed_streams.py).
        self.streams = RoutedStreams(dirty, self._paired, outbound)

    # ---- attach ------------------------------------------------------------------------
    def try_route(self, connection: AmqpConnection, pn_link: Any) -> bool:
        """Route a client's attach if a link route matches; True when handled here."""
        incoming = bool(lib.pn_link_is_receiver(pn_link))
        remote = lib.pn_link_remote_target(pn_link) if incoming else lib.pn_link_remote_source(pn_link)
        address = terminus_address(remote)
        if address is None and not incoming:
            address = dynamic_node_address(remote)
        if address is None:
            return False
        route = self.table.find(address, incoming)
        container = self.find_container(route) if route is not None and route.has_destination else None
        external = route.external(address) if route is not None and container is not None else address
        if container is None:
            routers = self.table.find_remote(address, incoming)
            if route is None and not routers:
                return False
            if routers and self.find_mesh_hop is not None:
                container = self.find_mesh_hop(routers, connection)
        self.route_via(connection, pn_link, container, route, external)
        return True

    def route_via(self, connection: AmqpConnection, pn_link: Any, container: AmqpConnection | None,
                  route: LinkRoute | None = None, external: str | None = None) -> None:
        """Pass a client's attach on to ``container`` (a broker, the next router, or an edge
        router's interior), or refuse it when there is none."""
        incoming = bool(lib.pn_link_is_receiver(pn_link))
        remote = lib.pn_link_remote_target(pn_link) if incoming else lib.pn_link_remote_source(pn_link)
        address = terminus_address(remote) or dynamic_node_address(remote) or ""
        external = external if external is not None else address
        lib.pn_terminus_copy(lib.pn_link_source(pn_link), lib.pn_link_remote_source(pn_link))
        lib.pn_terminus_copy(lib.pn_link_target(pn_link), lib.pn_link_remote_target(pn_link))
        if container is None:
            set_condition(lib.pn_link_condition(pn_link), NO_ROUTE, "No route to the destination node")
            lib.pn_link_open(pn_link)
            lib.pn_link_close(pn_link)
            self.dirty.add(connection)
            log.info("Link route for %s: no destination reachable; attach refused", address)
            return
        session = self._session(container)
        name = self._unique_name(container, connection, c_string(lib.pn_link_name(pn_link)) or "").encode()
        peer_link = lib.pn_sender(session, name) if incoming else lib.pn_receiver(session, name)
        lib.pn_terminus_copy(lib.pn_link_source(peer_link), lib.pn_link_remote_source(pn_link))
        lib.pn_terminus_copy(lib.pn_link_target(peer_link), lib.pn_link_remote_target(pn_link))
        routed_terminus = lib.pn_link_target(peer_link) if incoming else lib.pn_link_source(peer_link)
        if not lib.pn_terminus_is_dynamic(routed_terminus):
            lib.pn_terminus_set_address(routed_terminus, external.encode())
        lib.pn_link_set_snd_settle_mode(peer_link, lib.pn_link_remote_snd_settle_mode(pn_link))
        lib.pn_link_set_rcv_settle_mode(peer_link, lib.pn_link_remote_rcv_settle_mode(pn_link))
        lib.pn_link_open(peer_link)
        client = RoutedLink(pn_link, connection, incoming, next(self._ids))
        container_side = RoutedLink(peer_link, container, not incoming, next(self._ids))
        client.peer, container_side.peer = container_side, client
        container_side.route_in = incoming
        if route is not None:
            client.key = container_side.key = route.advert_key
            if route.add_prefix or route.del_prefix:
                container_side.prefixes = (route.add_prefix, route.del_prefix)
        self.routed[pn_link] = client
        self.routed[peer_link] = container_side
        self.dirty.add(container)
        log.debug("Link route: %s attach for %s on connection %d (r%d) routed to connection %d (r%d)",
                  "in" if incoming else "out", address, connection.identity, client.identity,
                  container.identity, container_side.identity)

    def _unique_name(self, container: AmqpConnection, client: AmqpConnection, name: str) -> str:
        """The client's link name, unless a routed link of that name is already attached on the
        container's connection: then NAME@CONTAINER-ID (qdrouterd's form), numbered if need be."""
        names = self._link_names.setdefault(container.identity, {})
        chosen = name
        if chosen in names:
            chosen = base = f"{name}@{client.remote_container}"
            for number in itertools.count(1):
                if chosen not in names:
                    break
                chosen = f"{base}#{number}"
        names[chosen] = names.get(chosen, 0) + 1
        return chosen

    def _retire(self, pn_link: Any) -> RoutedLink | None:
        """The routed link leaves the table; what it passed stays in the router's totals."""
        routed = self.routed.pop(pn_link, None)
        names = self._link_names.get(routed.connection.identity) if routed is not None else None
        if names is not None and routed is not None and \
                lib.pn_link_session(pn_link) == self._sessions.get(routed.connection.identity):
            name = c_string(lib.pn_link_name(pn_link)) or ""
            if names.get(name, 0) > 1:
                names[name] -= 1
            else:
                names.pop(name, None)
        if routed is not None and routed.connection.settings.role == ROUTE_CONTAINER:
            if routed.incoming:
                self.closed_route_container_ingress += routed.delivered
            else:
                self.closed_route_container_egress += routed.delivered
            if routed.key is not None:
                by_key = self.closed_route_container_by_key.setdefault(routed.key, [0, 0])
                by_key[0 if routed.incoming else 1] += routed.delivered
        return routed

    def _session(self, connection: AmqpConnection) -> Any:
        session = self._sessions.get(connection.identity)
        if session is None:
            session = lib.pn_session(connection.pn_connection)
            connection.session_settings(session)
            lib.pn_session_open(session)
            self._sessions[connection.identity] = session
        return session

    def remote_opened(self, pn_link: Any) -> bool:
        """The container answered our attach: answer the client's with its termini."""
        routed = self.routed.get(pn_link)
        if routed is None:
            return False
        client = routed.peer
        if client is not None and lib.pn_link_state(client.pn_link) & lib.PN_LOCAL_UNINIT:
            lib.pn_terminus_copy(lib.pn_link_source(client.pn_link), lib.pn_link_remote_source(pn_link))
            lib.pn_terminus_copy(lib.pn_link_target(client.pn_link), lib.pn_link_remote_target(pn_link))
            if routed.prefixes is not None:
                terminus = lib.pn_link_target(client.pn_link) if client.incoming else lib.pn_link_source(
                    client.pn_link)
                address = terminus_address(terminus)
                if address is not None:
                    internal = internal_address(address, *routed.prefixes)
                    lib.pn_terminus_set_address(terminus, internal.encode())
            lib.pn_link_open(client.pn_link)
            self.dirty.add(client.connection)
            log.debug("Link route: r%d answered by the destination; r%d opened", routed.identity,
                      client.identity)
        return True

    # ---- detach ------------------------------------------------------------------------
    def remote_closed(self, pn_link: Any) -> bool:
        """One end detached: detach the other with the same error."""
        routed = self._retire(pn_link)
        if routed is None:
            return False
        condition = lib.pn_link_remote_condition(pn_link)
        peer = routed.peer
        log.debug("Link route: r%d detached by its remote end", routed.identity)
        if peer is not None and self._retire(peer.pn_link) is not None:
            if lib.pn_condition_is_set(condition):
                set_condition(lib.pn_link_condition(peer.pn_link),
                              c_string(lib.pn_condition_get_name(condition)) or "amqp:internal-error",
                              c_string(lib.pn_condition_get_description(condition)) or "")
            self._close(peer)
        if not lib.pn_link_state(pn_link) & LOCAL_CLOSED:
            lib.pn_link_close(pn_link)
        self.dirty.add(routed.connection)
        return True

    def stop_credit(self) -> None:
        """A draining router (amqp/loop/drain.py): producers on routed links get no more credit,
        so what is in flight can settle while nothing new arrives."""
        self.credit_stopped = True

    def unsettled(self) -> int:
        """Routed deliveries not yet settled, each counted once (on the end it came in on)."""
        return sum(len(routed.deliveries) for routed in self.routed.values() if routed.incoming)

    def unsettled_on(self, connection: AmqpConnection) -> int:
        """Deliveries not yet settled on the routed links of ``connection``."""
        return sum(len(routed.deliveries) for routed in self.routed.values()
                   if routed.connection is connection)

    def connection_gone(self, connection: AmqpConnection) -> None:
        for routed in [r for r in self.routed.values() if r.connection is connection]:
            self._retire(routed.pn_link)
            peer = routed.peer
            if peer is not None and self._retire(peer.pn_link) is not None:
                set_condition(lib.pn_link_condition(peer.pn_link), "qd:routed-link-lost",
                              "The other end of this routed link went away")
                self._close(peer)
        self._sessions.pop(connection.identity, None)
        self._link_names.pop(connection.identity, None)

    def session_gone(self, session: Any) -> None:
        """A session ended under routed links: their other ends are detached."""
        for routed in [r for r in self.routed.values() if lib.pn_link_session(r.pn_link) == session]:
            if self._retire(routed.pn_link) is None:
                continue
            peer = routed.peer
            if peer is not None and self._retire(peer.pn_link) is not None:
                set_condition(lib.pn_link_condition(peer.pn_link), "qd:routed-link-lost",
                              "The other end of this routed link went away")
                self._close(peer)
            if not lib.pn_link_state(routed.pn_link) & LOCAL_CLOSED:
                lib.pn_link_close(routed.pn_link)
        for key, cached in list(self._sessions.items()):
            if cached == session:
                del self._sessions[key]

    def _close(self, routed: RoutedLink) -> None:
        self.streams.gone(routed)
        for delivery in routed.deliveries:
            lib.pn_delivery_settle(delivery)
        routed.deliveries.clear()
        if lib.pn_link_state(routed.pn_link) & lib.PN_LOCAL_UNINIT:
            lib.pn_link_open(routed.pn_link)
        lib.pn_link_close(routed.pn_link)
        self.dirty.add(routed.connection)

    # ---- deliveries --------------------------------------------------------------------
    def on_delivery(self, delivery: Any) -> None:
        routed = self.routed.get(lib.pn_delivery_link(delivery))
        if routed is None or routed.peer is None:
            return
        peer = routed.peer
        if routed.incoming:
            if self.streams.arrived(routed, peer, delivery):
                return
            if lib.pn_delivery_partial(delivery):
                # More to come; settling now (a pre-settled message being streamed) would
                # discard the rest. Its settlement is passed on with it once it is whole.
                return
            if lib.pn_delivery_readable(delivery):
                self._pass_message(routed, peer, delivery)
            elif lib.pn_delivery_settled(delivery):
                self._settle_pair(routed, peer, delivery)
            return
        state = lib.pn_delivery_remote_state(delivery)
        other = routed.deliveries.get(delivery)
        if other is not None and state:
            copy_disposition(delivery, other, state)
            lib.pn_delivery_update(other, state)
            self.dirty.add(peer.connection)
        if lib.pn_delivery_settled(delivery):
            self._settle_pair(routed, peer, delivery)

    def _pass_message(self, routed: RoutedLink, peer: RoutedLink, delivery: Any) -> None:
        size = lib.pn_delivery_pending(delivery)
        # One larger than the buffer (it arrived whole within one read) is read through a
        # buffer of its own, freed with it.
        pointer = self._pointer if size <= len(self._buffer) else ffi.new("char[]", size)
        count = lib.pn_link_recv(routed.pn_link, pointer, size)
        lib.pn_link_advance(routed.pn_link)
        if count < 0:  # aborted
            lib.pn_delivery_settle(delivery)
            return
        out = lib.pn_delivery(peer.pn_link, lib.pn_delivery_tag(delivery))
        lib.pn_link_send(peer.pn_link, pointer, count)
        lib.pn_link_advance(peer.pn_link)
        self._paired(routed, peer, delivery, out)

    def _paired(self, routed: RoutedLink, peer: RoutedLink, delivery: Any, out: Any) -> None:
        """``delivery`` has gone whole to ``out``: settled together, or paired for outcomes."""
        routed.delivered += 1
        peer.delivered += 1
        if lib.pn_delivery_settled(delivery):
            lib.pn_delivery_settle(out)
            lib.pn_delivery_settle(delivery)
        else:
            routed.deliveries[delivery] = out
            peer.deliveries[out] = delivery
        self._finish_drain(routed.pn_link, peer.pn_link)
        self.dirty.add(peer.connection)
        self.dirty.add(routed.connection)

    def _settle_pair(self, routed: RoutedLink, peer: RoutedLink, delivery: Any) -> None:
        other = routed.deliveries.pop(delivery, None)
        lib.pn_delivery_settle(delivery)
        if other is not None:
            peer.deliveries.pop(other, None)
            lib.pn_delivery_settle(other)
            self.dirty.add(peer.connection)
        self.dirty.add(routed.connection)

    # ---- flow --------------------------------------------------------------------------
    def on_flow(self, pn_link: Any) -> bool:
        """Credit and drain go upstream: the receiving end's credit becomes the sending end's."""
        routed = self.routed.get(pn_link)
        if routed is None or routed.peer is None:
            return routed is not None
        peer = routed.peer
        if not routed.incoming:
            # A consumer flowed on our sending link: grant the same to the producer.
            sender, receiver = pn_link, peer.pn_link
            want = lib.pn_link_credit(sender)
            have = lib.pn_link_credit(receiver) + lib.pn_link_queued(sender)
            drain = bool(lib.pn_link_get_drain(sender))
            if drain:
                lib.pn_link_drain(receiver, max(0, want - have))
            elif want > have and not self.credit_stopped:
                lib.pn_link_flow(receiver, want - have)
            if drain and lib.pn_link_queued(sender) == 0 and lib.pn_link_credit(receiver) <= 0:
                lib.pn_link_drained(sender)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("Link route: r%d credit %d (drain %s) -> r%d credit %d", routed.identity, want,
                          drain, peer.identity, lib.pn_link_credit(receiver))
        else:
            # The producer answered (e.g. drained): finish the consumer's drain.
            self._finish_drain(pn_link, peer.pn_link)
        self.dirty.add(routed.connection)
        self.dirty.add(peer.connection)
        return True



    def _finish_drain(self, receiver: Any, sender: Any) -> None:
        """The producer's credit is used up (by messages or its drain answer): the consumer's
        drain is complete, and the next drain must be asked afresh."""
        if lib.pn_link_credit(receiver) <= 0 and lib.pn_link_get_drain(receiver):
            lib.pn_link_set_drain(receiver, False)
            if lib.pn_link_get_drain(sender) and lib.pn_link_queued(sender) == 0:
                lib.pn_link_drained(sender)


def internal_address(external: str, add_prefix: str | None, del_prefix: str | None) -> str:
    """The container's address as the client knows it: addExternalPrefix taken off (when the
    address is longer than it), delExternalPrefix put back, as qdrouterd rewrites a
    link-routed attach's answer (terminus.c)."""
    if add_prefix and len(external) > len(add_prefix) and external.startswith(add_prefix):
        external = external[len(add_prefix):]
    return (del_prefix or "") + external
