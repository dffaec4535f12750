"""Connection, session and link lifecycles: open what peers open, close what they close,
and tell the core which links exist."""

from __future__ import annotations

import itertools
import logging
import sys
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, List

from ...core.links import ENDPOINT, CoreLink, LinkCounters
from ...core.outcomes import RELEASED
from ..bindings.proton_ffi import (
    LOCAL_CLOSED,
    LOCAL_UNINIT,
    c_string,
    lib,
    set_condition,
    terminus_key,
)
from ..bindings.proton_shim import pointer_key
from ..connections.connection import COST_PROPERTY, AmqpConnection, read_int_property
from ..data_path.deliveries import DeliveryAdaptor
from .attach_addresses import producer_address, unavailable
from .endpoint_listener import EndpointListener
from .inter_router import INTER_ROUTER, attach_links, link_kind, make_link
from .link_routing import ROUTE_CONTAINER, LinkRouter

if TYPE_CHECKING:
    from .policing import ConnectionPolicer

log = logging.getLogger("qdrouter.ROUTER")

EDGE = "edge"  # the role of connections between edge and interior routers

# A producer's snd-settle-mode -> CoreLink.sends_settled (mixed: no entry, None).
_SENDS_SETTLED = {lib.PN_SND_SETTLED: True, lib.PN_SND_UNSETTLED: False}


class EndpointHandler:
    def __init__(self, router_id: str, adaptor: DeliveryAdaptor) -> None:
        self.router_id = router_id
        self.adaptor = adaptor
        self.forwarder = adaptor.forwarder
        self.connections: Dict[Any, AmqpConnection] = {}
        self._link_ids = itertools.count(1)
        # What links already gone add to the router's delivery totals (management's router
        # entity, /metrics), so that those never go down when a client leaves: outgoing links'
        # counters, and the pre-settled deliveries incoming links dropped.
        self.closed_link_counters = LinkCounters()
        # Deliveries that links of route-container connections (brokers: auto-links, links a
        # container attached) received and sent before they went: qdstat -g's Deliveries
        # from / to Route Container count live links plus these.
        self.closed_route_container_ingress = 0
        self.closed_route_container_egress = 0
        # Who hears of connections and links as they come and go (amqp/links/endpoint_listener.py).
        self._listeners: List[EndpointListener] = []
        # Links this router attached itself (auto-links), told when the peer answers the
        # attach (True) or detaches (False, with the peer's error if any).
        self.link_watchers: Dict[Any, Callable[[bool, str | None], None]] = {}
        # Ties link-routed attaches to their containers (route_links_with).
        self.link_router: LinkRouter | None = None
        # Policy for user connections (amqp/links/policing.py), when the router has one
        # (police_with).
        self.policer: ConnectionPolicer | None = None
        # What a router calls its dynamic addresses (an edge router's name it: qdrouter/edge/).
        self.dynamic_prefix = f"_topo/0/{router_id}/temp."
        # Links and sessions closed at both ends, freed by free_closed() at the end of the
        # loop turn (docs/architecture.md, "Native objects"): keyed by pointer, so one closed
        # twice in a turn is freed once.
        self._closed_links: Dict[Any, AmqpConnection] = {}
        self._closed_sessions: Dict[Any, AmqpConnection] = {}

    def route_links_with(self, link_router: LinkRouter) -> None:
        """Link-routed attaches go to ``link_router`` (one per router)."""
        if self.link_router is not None:
            raise ValueError("the endpoints already have a link router")
        self.link_router = link_router

    def police_with(self, policer: ConnectionPolicer) -> None:
        """Sessions and links of user connections are checked by ``policer`` (one per router)."""
        if self.policer is not None:
            raise ValueError("the endpoints already have a policer")
        self.policer = policer

    def add_listener(self, listener: EndpointListener) -> None:
        """``listener`` hears of connections and links from now on, after those added before."""
        self._listeners.append(listener)

    # ---- connections -------------------------------------------------------------------
    def connection_opened(self, pn_connection: Any) -> None:
        connection = self.connections.get(pn_connection)
        if connection is None:
            return
        connection.remote_container = c_string(lib.pn_connection_remote_container(pn_connection))
        if connection.settings.role == INTER_ROUTER:
            connection.remote_cost = read_int_property(
                lib.pn_connection_remote_properties(pn_connection), COST_PROPERTY)
        user = connection.authenticated_user()
        # Interned: thousands of connections share a handful of user names ("anonymous").
        connection.user = sys.intern(user) if user is not None else None
        policer = self.policer
        if policer is not None and not connection.client \
                and not policer.opened(connection, pn_connection):
            return
        if policer is not None and connection.client and not policer.connector_opened(connection):
            return
        if lib.pn_connection_state(pn_connection) & LOCAL_UNINIT:
            lib.pn_connection_open(pn_connection)
        log.info("Connection %d %s %s opened (container %s)", connection.identity,
                 "to" if connection.client else "from", connection.peer, connection.remote_container)
        self.adaptor.dirty.add(connection)
        if connection.owner is not None:
            connection.owner.connection_opened(connection)
        for listener in self._listeners:
            listener.connection_opened(connection)

    def connection_closed(self, pn_connection: Any) -> None:
        connection = self.connections.get(pn_connection)
        if connection is None:
            return
        condition = lib.pn_connection_remote_condition(pn_connection)
        if lib.pn_condition_is_set(condition):
            connection.last_error = (f"{c_string(lib.pn_condition_get_name(condition))}: "
                                     f"{c_string(lib.pn_condition_get_description(condition))}")
        self.detach_all(connection)
        lib.pn_connection_close(pn_connection)
        self.adaptor.dirty.add(connection)

    def detach_consumers(self, connection: AmqpConnection) -> None:
        """The connection's sending links leave the core: what they hold unsettled goes back
        to its senders as modified (see Forwarder.consumer_detached)."""
        links = [link for link in connection.links.values() if not link.incoming]
        taken = self.forwarder.consumers_leaving(links) if len(links) > 1 else ()
        for link in links:
            self._forget(link, listed=link not in taken)

    def release_waiting(self, connection: AmqpConnection) -> None:
        """Unsettled messages of the connection's producers that no consumer holds (queued for
        credit or a route) go back to their senders as released: nobody has seen them."""
        for link in list(connection.links.values()):
            if link.incoming:
                self.adaptor.waiting.leave(link)  # read now, or never released
                for message in [m for m in link.unsettled.values() if m.out_key is None]:
                    self.adaptor.finish_incoming(message, RELEASED)

    def detach_all(self, connection: AmqpConnection) -> None:
        """The connection is going: every link of it leaves the core."""
        links = list(connection.links.values())
        taken = self.forwarder.consumers_leaving(links) if len(links) > 1 else ()
        for link in links:
            self._forget(link, listed=link not in taken)
        if self.link_router is not None:
            self.link_router.connection_gone(connection)
        for listener in self._listeners:
            listener.connection_lost(connection)

    # ---- sessions ----------------------------------------------------------------------
    def session_opened(self, session: Any) -> None:
        if not lib.pn_session_state(session) & LOCAL_UNINIT:
            return
        connection = self.connections.get(lib.pn_session_connection(session))
        if connection is not None:
            connection.session_settings(session)
        if self.policer is not None and connection is not None:
            denial = self.policer.session(connection, session)
            if denial is not None:
                # Only a peer ignoring our channel-max (maxSessions - 1) gets here, on a channel
                # above it: proton has no channel to answer its begin on (opening the session
                # would stall the connection's output), so the connection closes, naming the rule.
                self.policer.refuse_session(connection, denial)
                return
        lib.pn_session_open(session)

    def session_closed(self, session: Any) -> None:
        """The peer ended a session: its links end with it (with the session's error)."""
        connection = self.connections.get(lib.pn_session_connection(session))
        error = _remote_error(lib.pn_session_remote_condition(session)) or "session ended"
        if connection is not None:
            for link in list(connection.links.values()):
                handle = link.handle
                if handle is not None and lib.pn_link_session(handle) == session:
                    self._forget(link, error)
                    lib.pn_link_close(handle)
            if self.link_router is not None:
                self.link_router.session_gone(session)
            if self.policer is not None and not lib.pn_session_state(session) & LOCAL_CLOSED:
                self.policer.session_ended(connection)
            self.adaptor.dirty.add(connection)
            self._closed_sessions[session] = connection
        lib.pn_session_close(session)

    # ---- links -------------------------------------------------------------------------
    def link_opened(self, pn_link: Any) -> None:
        if not lib.pn_link_state(pn_link) & LOCAL_UNINIT:
            watcher = self.link_watchers.get(pn_link)
            if watcher is not None:
                watcher(True, None)
            elif self.link_router is not None:
                self.link_router.remote_opened(pn_link)
            return
        connection = self.connections.get(lib.pn_session_connection(lib.pn_link_session(pn_link)))
        if connection is None:
            return
        lib.pn_terminus_copy(lib.pn_link_source(pn_link), lib.pn_link_remote_source(pn_link))
        lib.pn_terminus_copy(lib.pn_link_target(pn_link), lib.pn_link_remote_target(pn_link))
        name = c_string(lib.pn_link_name(pn_link)) or ""
        settings = connection.settings
        if settings.role == INTER_ROUTER:
            self._inter_router_link(connection, pn_link, name)
            return
        if connection.policy is not None and self.policer is not None:
            denial = self.policer.link(connection, pn_link)
            if denial is not None:
                self._refuse(connection, pn_link, denial.condition, denial.description)
                return
        if settings.role == EDGE and any(listener.edge_link_opened(connection, pn_link)
                                         for listener in self._listeners):
            return
        if settings.role == "normal" and any(listener.hold_attach(connection, pn_link)
                                             for listener in self._listeners):
            return
        if self.link_router is not None and settings.role in ("normal", EDGE) \
                and self.link_router.try_route(connection, pn_link):
            return
        table = self.forwarder.table
        incoming = bool(lib.pn_link_is_receiver(pn_link))
        if incoming:
            key = producer_address(pn_link)
            key = table.ingress_key(key) if key is not None else None
        else:
            key = self._consumer_address(pn_link)
            if key is None:
                self._refuse(connection, pn_link, "amqp:invalid-field",
                             "A receiving link needs a source address or a dynamic source")
                return
            key = table.egress_key(key)
        if key is not None and unavailable(table, key):
            # As qdrouterd: an address whose distribution is unavailable (its entity's, or the
            # router's defaultDistribution) has no node to attach to.
            self._refuse(connection, pn_link, "amqp:not-found", "Node not found")
            return
        link = CoreLink(next(self._link_ids), name, incoming, key, connection, pn_link,
                        settings.strip_in, settings.strip_out)
        link.capacity = settings.link_capacity
        link.via_edge = settings.role == EDGE
        if incoming:
            link.sends_settled = _SENDS_SETTLED.get(lib.pn_link_remote_snd_settle_mode(pn_link))
        self._register(connection, link)
        if connection.policy is not None and self.policer is not None:
            self.policer.watch_messages(connection, link)
        elif settings.role == EDGE:
            for listener in self._listeners:
                listener.edge_link_attached(connection, link)
        lib.pn_link_open(pn_link)
        if incoming:
            self.forwarder.producer_attached(link)
        else:
            self.forwarder.consumer_attached(link)
        log.debug("%s link %s attached to %s", "Producer" if incoming else "Consumer", name,
                  key or "(anonymous)")
        self.adaptor.dirty.add(connection)

    def _refuse(self, connection: AmqpConnection, pn_link: Any, condition: str, description: str) -> None:
        """Answer an attach only to detach it at once with an error, as AMQP requires."""
        set_condition(lib.pn_link_condition(pn_link), condition, description)
        lib.pn_link_open(pn_link)
        lib.pn_link_close(pn_link)
        self.adaptor.dirty.add(connection)

    def _inter_router_link(self, connection: AmqpConnection, pn_link: Any, name: str) -> None:
        kind = link_kind(pn_link)
        if kind is None and any(listener.routed_attach(connection, pn_link) for listener in self._listeners):
            return  # refused (a draining router: amqp/loop/drain.py)
        if kind is None and self.link_router is not None and self.link_router.try_route(connection, pn_link):
            return  # a link-routed attach on its way to a destination across the mesh
        if kind is None:
            self._refuse(connection, pn_link, "amqp:not-allowed",
                         "Inter-router connections carry only qd.router and qd.router-data links")
            return
        link = make_link(next(self._link_ids), name, bool(lib.pn_link_is_receiver(pn_link)), connection,
                         pn_link, kind)
        lib.pn_link_open(pn_link)
        self.add_inter_router_links(connection, [link])

    def open_inter_router(self, connection: AmqpConnection) -> None:
        """The connecting side of an inter-router connection attaches its links."""
        self.add_inter_router_links(connection, attach_links(connection, lambda: next(self._link_ids)))

    def add_inter_router_links(self, connection: AmqpConnection, links: List[CoreLink]) -> None:
        for link in links:
            self._register(connection, link)
            if link.incoming:
                self.forwarder.producer_attached(link)
            for listener in self._listeners:
                listener.inter_router_link_attached(link)
        self.adaptor.dirty.add(connection)

    def _consumer_address(self, pn_link: Any) -> str | None:
        remote_source = lib.pn_link_remote_source(pn_link)
        if lib.pn_terminus_is_dynamic(remote_source):
            # Routable from anywhere in a mesh: _topo addresses name this router.
            address = f"{self.dynamic_prefix}{uuid.uuid4().hex[:12]}"
            lib.pn_terminus_set_address(lib.pn_link_source(pn_link), address.encode())
            return address
        return terminus_key(remote_source)

    def link_closed(self, pn_link: Any) -> None:
        connection = self.connections.get(lib.pn_session_connection(lib.pn_link_session(pn_link)))
        if connection is not None:
            # Detached by the peer, and by us below (or by the link router): nothing of the
            # router points at it after this handler.
            self._closed_links[pn_link] = connection
            if connection.policy is not None and self.policer is not None:
                self.policer.link_closed(connection, pn_link)
        for listener in self._listeners:
            listener.link_gone(pn_link)
        if self.link_router is not None and self.link_router.remote_closed(pn_link):
            return
        watcher = self.link_watchers.pop(pn_link, None)
        if watcher is not None:
            watcher(False, _remote_error(lib.pn_link_remote_condition(pn_link)))
        link = self.adaptor.links.get(pointer_key(pn_link))
        if link is not None:
            self._forget(link)
            self.adaptor.dirty.add(link.connection)
        if not lib.pn_link_state(pn_link) & LOCAL_CLOSED:
            lib.pn_link_close(pn_link)

    def free_closed(self) -> None:
        """Free the links and sessions closed at both ends this turn. Their events have all
        been handled (the collector is empty between turns; events the shim still holds keep
        their own references). Links go before sessions (pn_session_free frees the links
        still in it), and nothing of a connection already released (pn_connection_release freed
        it all) is freed twice."""
        links, sessions = self._closed_links, self._closed_sessions
        if not links and not sessions:
            return
        self._closed_links, self._closed_sessions = {}, {}
        for pn_link, connection in links.items():
            if not connection.closed:
                lib.pn_link_free(pn_link)
        for session, connection in sessions.items():
            if not connection.closed:
                lib.pn_session_free(session)

    def link_closed_locally(self, link: CoreLink) -> None:
        """The router itself detaches one of its links (an auto-link being deleted)."""
        self._forget(link)

    def new_link_id(self) -> int:
        return next(self._link_ids)

    def register(self, connection: AmqpConnection, link: CoreLink) -> None:
        self._register(connection, link)

    def _register(self, connection: AmqpConnection, link: CoreLink) -> None:
        connection.links[link.handle] = link
        self.adaptor.links[pointer_key(link.handle)] = link

    def _forget(self, link: CoreLink, error: str = "connection closed", listed: bool = True) -> None:
        handle = link.handle
        if handle is None:
            return
        if link.incoming:
            # Messages waiting unread in proton are read while it still has them.
            self.adaptor.streams.producer_gone(link)
            self.adaptor.waiting.leave(link)
        watcher = self.link_watchers.pop(handle, None)
        if watcher is not None:
            watcher(False, error)
        self.adaptor.links.pop(pointer_key(handle), None)
        if self.policer is not None:
            self.policer.forget(handle)
        link.connection.links.pop(handle, None)
        closed = self.closed_link_counters
        if link.incoming:
            closed.dropped_presettled += link.counters.dropped_presettled
        else:
            for name in LinkCounters.__slots__:
                setattr(closed, name, getattr(closed, name) + getattr(link.counters, name))
        if link.connection.settings.role == ROUTE_CONTAINER:
            # The address keeps its share too (the forwarder unbinds the link just below).
            address = link.address
            if link.incoming:
                self.closed_route_container_ingress += link.counters.delivered
                if address is not None:
                    address.counters.route_container_ingress += link.counters.delivered
            else:
                self.closed_route_container_egress += link.counters.delivered
                if address is not None:
                    address.counters.route_container_egress += link.counters.delivered
        if link.incoming:
            self.forwarder.producer_detached(link)
        else:
            address = link.address
            self.adaptor.drop_outgoing(link)
            self.forwarder.consumer_detached(link, listed)
            if address is not None:
                self.adaptor.waiting.resume(address)  # to another consumer, or released
        if link.kind != ENDPOINT:
            for listener in self._listeners:
                listener.inter_router_link_lost(link)


def _remote_error(condition: Any) -> str | None:
    if not lib.pn_condition_is_set(condition):
        return None
    return (f"{c_string(lib.pn_condition_get_name(condition))}: "
            f"{c_string(lib.pn_condition_get_description(condition))}")

