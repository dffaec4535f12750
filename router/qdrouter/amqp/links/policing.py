"""Policy applied to live AMQP connections: the adaptor side of ``qdrouter.policy``.

The engine decides; this module reads what it needs from proton (open hostname, user,
peer address, termini) and applies the answers (close, refuse, negotiated limits); messages
are policed by amqp/links/policing_messages.py. As in qdrouterd 1.19 (server.c, policy.c), every
connection accepted on a listener, inter-router ones included, counts against maxConnections;
those of role normal, route-container or edge are also held to vhost rules; the router's own
outgoing ones are neither, unless their connector names a policyVhost."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Protocol

from ...policy import ConnectionGrant, Denial, PolicyEngine
from ...policy.settings import MAX_INT32
from ..bindings.proton_ffi import c_string, lib, set_condition
from ..bindings.proton_shim import pointer_key
from ..connections.connection import AmqpConnection
from .capabilities import capabilities
from .policing_messages import MessagePolicer

if TYPE_CHECKING:
    from ...core.links import CoreLink
    from ..data_path.deliveries import DeliveryAdaptor
    from .endpoints import EndpointHandler

log = logging.getLogger("qdrouter.POLICY")

# qdrouterd polices every accepted connection but inter-router ones as a user connection
# (policy.c qd_policy_amqp_open): brokers and management tools on route-container listeners,
# and edge routers on edge listeners, are held to their vhost's rules, so operators migrating
# from it keep the limits they set on them. (maxConnections counts every role: accepted().)
POLICED_ROLES = frozenset(("normal", "route-container", "edge"))
# Connectors whose policyVhost polices their connections (policy.c qd_policy_amqp_open_connector).
CONNECTOR_ROLES = frozenset(("normal", "route-container"))
# How long a connection refused by the global limit may stay to read the refusal.
REFUSED_GRACE_S = 2.0


def remote_host(peer: str) -> str:
    """The address part of 'host:port' (IPv6 literals keep their colons). Interned: every
    connection's grant keeps it, and most connections share a few hosts."""
    return sys.intern(peer.rsplit(":", 1)[0].strip("[]"))


class ConnectionPolicer:
    def __init__(self, engine: PolicyEngine, adaptor: Any, refuse_link: Callable[[CoreLink], None]) -> None:
        self.engine = engine
        self.adaptor = adaptor
        # Sessions granted per connection (policy counts only while the connection lives).
        self.sessions: Dict[AmqpConnection, int] = {}
        # Links granted per policed connection: link key -> True for a client's sender.
        self.links: Dict[AmqpConnection, Dict[Any, bool]] = {}
        self.messages = MessagePolicer(engine, adaptor, refuse_link)
        self.handshake_timeouts = 0

    @staticmethod
    def applies(connection: AmqpConnection) -> bool:
        """Vhost rules hold ``connection`` (every accepted connection but inter-router ones)."""
        return not connection.client and connection.settings.role in POLICED_ROLES

    # ---- connections --------------------------------------------------------------------
    def accepted(self, connection: AmqpConnection) -> bool:
        """A socket was accepted: the global connection limit. A refused connection is closed
        with an AMQP error once its header arrives (or dropped by the handshake timer).
        Inter-router sockets count too, as qdrouterd's server.c counts every socket a listener
        accepts: an operator's maxConnections bounds the router's sockets whatever their role,
        so a limit carried over from qdrouterd leaves room for the same peers."""
        if connection.client:
            return True
        denial = self.engine.socket_accepted()
        if denial is None:
            connection.admitted = True
            return True
        log.info("Connection from %s refused: %s", connection.peer, denial.description)
        self._close(connection, denial)
        return False

    def opened(self, connection: AmqpConnection, pn_connection: Any) -> bool:
        """The peer's open of an accepted connection: refused if maxConnections refused its
        socket; otherwise vhost, user and host decide, and limits go into our open."""
        if not connection.admitted:
            return False
        if not self.applies(connection):
            return True  # inter-router: counted, but no vhost rules
        hostname = (connection.settings.policy_vhost
                    or c_string(lib.pn_connection_remote_hostname(pn_connection)))
        user = connection.user or "anonymous"
        host = remote_host(connection.peer)
        decision = self.engine.open(hostname, user, host)
        if isinstance(decision, Denial):
            log.info("Connection %d from %s (user %s, vhost %s) denied: %s", connection.identity,
                     connection.peer, user, hostname, decision.description)
            self._close(connection, decision)
            return False
        connection.policy = decision
        group = decision.group
        if group is not None:
            transport = connection.transport
            frame = self.engine.frame_size(decision, connection.settings.max_frame_size)
            lib.pn_transport_set_max_frame(transport, frame)
            if group.max_sessions < 65536:
                lib.pn_transport_set_channel_max(transport, max(0, group.max_sessions - 1))
        # Sessions are counted from the first (session() starts at 0): no entry per idle
        # connection.
        return True

    def connector_opened(self, connection: AmqpConnection) -> bool:
        """An outgoing connection's peer opened. A connector with a policyVhost (role normal
        or route-container) has its connection policed by that vhost's '$connector' group,
        as qdrouterd does: what the peer attaches is held to its rules; without such a
        group the connection is closed."""
        settings = connection.settings
        if not connection.client or not settings.policy_vhost or settings.role not in CONNECTOR_ROLES \
                or not self.engine.enable_vhost_policy:
            return True
        decision = self.engine.connector(settings.policy_vhost, connection.user or "")
        if isinstance(decision, Denial):
            log.info("Connection %d to %s closed: %s", connection.identity, connection.peer,
                     decision.description)
            self._close(connection, decision)
            return False
        connection.policy = decision
        return True

    def released(self, connection: AmqpConnection) -> None:
        self.sessions.pop(connection, None)
        self.links.pop(connection, None)
        if connection.policy is not None:
            self.engine.closed(connection.policy)
            connection.policy = None
        if connection.admitted:
            connection.admitted = False
            self.engine.socket_closed()

    def _close(self, connection: AmqpConnection, denial: Denial) -> None:
        pn_connection = connection.pn_connection
        set_condition(lib.pn_connection_condition(pn_connection), denial.condition, denial.description)
        if lib.pn_connection_state(pn_connection) & lib.PN_LOCAL_UNINIT:
            lib.pn_connection_open(pn_connection)
        lib.pn_connection_close(pn_connection)
        self.adaptor.dirty.add(connection)

    def overdue(self, connection: AmqpConnection, now: float) -> bool:
        """True for an incoming connection to drop now: refused by the global limit and given
        REFUSED_GRACE_S to read why, or not opened within its listener's handshake timeout."""
        if connection.client or connection.closed:
            return False
        age = now - connection.accepted_at
        if not connection.admitted and age > REFUSED_GRACE_S:
            return True
        timeout = connection.settings.handshake_timeout_s
        unopened = lib.pn_connection_state(connection.pn_connection) & lib.PN_REMOTE_UNINIT
        if timeout and age > timeout and unopened:
            self.handshake_timeouts += 1
            log.info("Connection %d from %s dropped: not opened within %gs (initialHandshakeTimeoutSeconds)",
                     connection.identity, connection.peer, timeout)
            return True
        return False

    # ---- sessions and links -------------------------------------------------------------
    def session(self, connection: AmqpConnection, session: Any) -> Denial | None:
        grant: ConnectionGrant | None = connection.policy
        if grant is None or grant.group is None:
            return None
        count = self.sessions.get(connection, 0)
        denial = self.engine.session(grant, count)
        if denial is None:
            self.sessions[connection] = count + 1
            group = grant.group
            if group.max_session_window < MAX_INT32 and not grant.outgoing:
                # maxSessionWindow is in octets (qdrouterd 1.19's schema): the session's
                # incoming capacity, but never less than one frame, or nothing could move.
                frame = lib.pn_transport_get_max_frame(connection.transport) or 16384
                lib.pn_session_set_incoming_capacity(session, max(group.max_session_window, frame))
        return denial

    def refuse_session(self, connection: AmqpConnection, denial: Denial) -> None:
        log.info("Connection %d from %s closed: %s", connection.identity, connection.peer, denial.description)
        self._close(connection, denial)

    def session_ended(self, connection: AmqpConnection) -> None:
        if connection in self.sessions and self.sessions[connection] > 0:
            self.sessions[connection] -= 1

    def link(self, connection: AmqpConnection, pn_link: Any) -> Denial | None:
        """An attach from the client: counts, termini and the dynamic/anonymous rules. The
        addresses are compared as the client wrote them, as qdrouterd compares them; the
        counts are of the links this policy let in (link-routed ones too), until each detaches."""
        grant: ConnectionGrant | None = connection.policy
        if grant is None or grant.group is None:
            return None
        counts = self.links.get(connection)
        if counts is None:
            counts = self.links[connection] = {}
        incoming = bool(lib.pn_link_is_receiver(pn_link))
        if incoming:
            terminus = lib.pn_link_remote_target(pn_link)
            senders = sum(1 for sends in counts.values() if sends)
            target = c_string(lib.pn_terminus_get_address(terminus)) or None
            denial = self.engine.sender(grant, senders, target, capabilities(terminus))
        else:
            terminus = lib.pn_link_remote_source(pn_link)
            receivers = sum(1 for sends in counts.values() if not sends)
            dynamic = bool(lib.pn_terminus_is_dynamic(terminus))
            source = c_string(lib.pn_terminus_get_address(terminus)) or None
            denial = self.engine.receiver(grant, receivers, source, dynamic, capabilities(terminus))
        if denial is not None:
            log.info("Link from %s (user %s) refused: %s", connection.peer, grant.user, denial.description)
            return denial
        counts[pointer_key(pn_link)] = incoming
        if grant.max_message_size:
            lib.pn_link_set_max_message_size(pn_link, grant.max_message_size)
        return None

    def link_closed(self, connection: AmqpConnection, pn_link: Any) -> None:
        """The client detached a link: its place under maxSenders/maxReceivers is free."""
        counts = self.links.get(connection)
        if counts is not None:
            counts.pop(pointer_key(pn_link), None)

    def watch_messages(self, connection: AmqpConnection, link: Any) -> None:
        """A client's sending link whose messages need a look: a size limit, a user-id check,
        or, on an anonymous link, each message's address against the user's targets."""
        grant: ConnectionGrant | None = connection.policy
        if grant is not None and link.incoming and (
                grant.polices_messages or (link.anonymous and grant.group is not None)):
            self.adaptor.policed[link.handle] = grant

    def forget(self, handle: Any) -> None:
        self.adaptor.policed.pop(handle, None)
        self.messages.forget(handle)

    # ---- messages -----------------------------------------------------------------------
    def message(self, link: Any, delivery: Any) -> bytes | None:
        """A delivery on a policed link: the complete message if it may pass, else None
        (amqp/links/policing_messages.py)."""
        return self.messages.message(link, delivery)

    def held(self, handle: Any) -> bytes | None:
        """What was read so far of a policed link's message still arriving (streaming takes
        it over: amqp/data_path/streaming.py), if anything."""
        return self.messages.held(handle)

    def head_denial(self, link: Any, head: bytes) -> Denial | None:
        return self.messages.head_denial(link, head)

    def drop_held(self, handle: Any) -> None:
        self.messages.forget(handle)

    def refuse_oversize(self, link: Any, delivery: Any, size: int) -> None:
        self.messages.refuse_oversize(link, delivery, size)


def install(server: PolicedServer, engine: PolicyEngine) -> ConnectionPolicer:
    """Give a server's accept, endpoint and delivery hooks one policer over ``engine``."""
    policer = ConnectionPolicer(engine, server.adaptor, server.endpoints.link_closed_locally)
    server.police_with(policer)
    return policer


class PolicedServer(Protocol):
    """What install asks of the server (amqp/loop/server.py, a room above this one)."""

    @property
    def adaptor(self) -> DeliveryAdaptor: ...

    @property
    def endpoints(self) -> EndpointHandler: ...

    def police_with(self, policer: ConnectionPolicer) -> None: ...
