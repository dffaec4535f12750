"""Policy applied to live AMQP connections: the adaptor side of ``qdrouter.policy``.

The engine decides; this module reads what it needs from proton (open hostname, user,
peer address, termini, message bytes) and applies the answers (close, refuse, reject,
negotiated limits). As in qdrouterd 1.19 (policy.c, server.c), the connections accepted on
a listener of role normal, route-container or edge are policed (counted against
maxConnections, vhost rules); inter-router connections, and the router's own outgoing ones,
are not."""

from __future__ import annotations

import logging
import sys
from typing import Any, Dict

from ..policy import ConnectionGrant, Denial, PolicyEngine
from ..policy.engine import MESSAGE_SIZE, OVERSIZE
from ..policy.settings import MAX_INT32
from .amqp_types import PROPERTIES, MessageFormatError, section_value, skip_value, u32
from .capabilities import capabilities
from .connection import AmqpConnection
from .message_sections import find_sections, read_annotations, read_to
from .proton_ffi import c_string, lib, set_condition
from .proton_shim import pointer_key

log = logging.getLogger("qdrouter.POLICY")

# qdrouterd polices every accepted connection but inter-router ones as a user connection
# (policy.c qd_policy_amqp_open): brokers and management tools on route-container listeners,
# and edge routers on edge listeners, are held to their vhost's rules and counted against
# maxConnections, so operators migrating from it keep the limits they set on them.
POLICED_ROLES = frozenset(("normal", "route-container", "edge"))
CONNECTION_FORCED = "amqp:connection:forced"
# Connectors whose policyVhost polices their connections (policy.c qd_policy_amqp_open_connector).
CONNECTOR_ROLES = frozenset(("normal", "route-container"))
EDGE_ROLE = "edge"
# How long a connection refused by the global limit may stay to read the refusal.
REFUSED_GRACE_S = 2.0


def remote_host(peer: str) -> str:
    """The address part of 'host:port' (IPv6 literals keep their colons). Interned: every
    connection's grant keeps it, and most connections share a few hosts."""
    return sys.intern(peer.rsplit(":", 1)[0].strip("[]"))


class ConnectionPolicer:
    def __init__(self, engine: PolicyEngine, adaptor: Any) -> None:
        self.engine = engine
        self.adaptor = adaptor
        # Sessions granted per connection (policy counts only while the connection lives).
        self.sessions: Dict[AmqpConnection, int] = {}
        # Links granted per policed connection: link key -> True for a client's sender.
        self.links: Dict[AmqpConnection, Dict[Any, bool]] = {}
        # The part read so far of each policed link's current, still arriving message.
        self.partials: Dict[Any, bytearray] = {}
        self.handshake_timeouts = 0

    @staticmethod
    def applies(connection: AmqpConnection) -> bool:
        return not connection.client and connection.settings.role in POLICED_ROLES

    # ---- connections --------------------------------------------------------------------
    def accepted(self, connection: AmqpConnection) -> bool:
        """A socket was accepted: the global connection limit. A refused connection is closed
        with an AMQP error once its header arrives (or dropped by the handshake timer)."""
        if not self.applies(connection):
            return True
        denial = self.engine.socket_accepted()
        if denial is None:
            connection.admitted = True
            return True
        log.info("Connection from %s refused: %s", connection.peer, denial.description)
        self._close(connection, denial)
        return False

    def opened(self, connection: AmqpConnection, pn_connection: Any) -> bool:
        """The peer's open: vhost, user and host decide; limits go into our open."""
        if not connection.admitted:
            return False
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
        if not connection.admitted and self.applies(connection) and age > REFUSED_GRACE_S:
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
        self.partials.pop(handle, None)

    # ---- messages -----------------------------------------------------------------------
    def message(self, link: Any, delivery: Any) -> bytes | None:
        """A delivery on a policed link: the complete message if it may pass, else None (it
        was rejected, or is still arriving). Oversized messages are refused while still
        streaming, so a hostile sender cannot make the router buffer them."""
        grant: ConnectionGrant = self.adaptor.policed[link.handle]
        handle = link.handle
        limit = grant.max_message_size
        if lib.pn_delivery_aborted(delivery):
            self.partials.pop(handle, None)
            lib.pn_link_advance(handle)
            lib.pn_delivery_settle(delivery)
            return None
        size = lib.pn_delivery_pending(delivery)
        held = self.partials.get(handle)
        total = size + (len(held) if held is not None else 0)
        if lib.pn_delivery_partial(delivery):
            if limit and total > limit:
                # Refused while still arriving: nothing more of it is read or kept.
                self.partials.pop(handle, None)
                denial = self.engine.message(grant, total, None)
                if denial is not None:
                    self._oversize(link, delivery, denial)
                return None
            # Take what arrived out of proton, so a session window smaller than a message
            # (maxSessionWindow) keeps opening instead of waiting for the message's end.
            if size > 0:
                chunk = self.adaptor.read_message(link, delivery, size, advance=False)
                if held is None:
                    self.partials[handle] = bytearray(chunk)
                else:
                    held += chunk
            return None
        raw = self.adaptor.read_message(link, delivery, size)
        if held is not None:
            del self.partials[handle]
            held += raw
            raw = bytes(held)
        user_id = None
        if grant.check_user_id:
            try:
                user_id = read_user_id(raw)
            except MessageFormatError:
                user_id = None  # the router's own parsing rejects malformed messages later
        denial = self.engine.message(grant, len(raw), user_id)
        if denial is None and link.anonymous and grant.group is not None:
            denial = self._check_target(grant, link, raw)
        if denial is None:
            return raw
        log.info("Message from %s (user %s) refused: %s", link.connection.peer, grant.user,
                 denial.description)
        if denial.condition == MESSAGE_SIZE:
            self._oversize(link, delivery, denial)
        else:
            self.adaptor.reject_delivery(link, delivery, denial.condition, denial.description)
        return None

    def _oversize(self, link: Any, delivery: Any, denial: Denial) -> None:
        """A message above maxMessageSize: as qdrouterd (router_node.c AMQP_rx_handler), the
        delivery is rejected, its link closed and the connection closed with
        amqp:connection:forced, "Message size exceeded". Not an edge router's: its one
        uplink carries every client of the edge, and one client's message must not cut the
        others off; the message is rejected (closing only the link when it was still
        arriving, so that the rest of it is never read)."""
        connection = link.connection
        if connection.settings.role == EDGE_ROLE:
            if lib.pn_delivery_partial(delivery):
                self._close_link(link, denial)
            else:
                self.adaptor.reject_delivery(link, delivery, denial.condition, denial.description)
            return
        self.adaptor.reject_delivery(link, delivery, denial.condition, denial.description)
        self._close_link(link, denial)
        log.info("Connection %d from %s closed: %s", connection.identity, connection.peer, denial.description)
        set_condition(lib.pn_connection_condition(connection.pn_connection), CONNECTION_FORCED, OVERSIZE)
        lib.pn_connection_close(connection.pn_connection)
        self.adaptor.dirty.add(connection)

    def _check_target(self, grant: ConnectionGrant, link: Any, raw: bytes) -> Denial | None:
        """A message on an anonymous link may go only where its user may attach a sender: the
        address it would be routed by, as the client wrote it, against the targets (qdrouterd:
        qd_policy_approve_message_target). Without this an anonymous sender reaches any
        address, management's among them."""
        try:
            address = routed_address(raw, link.strip_in)
        except MessageFormatError as error:
            # Unreadable, so unroutable: refused here rather than trusting a later parse.
            return Denial("amqp:decode-error", f"invalid message format: {error}")
        if address is None:
            return None  # nowhere to go: the router's routing releases it
        denial = self.engine.message_target(grant, address)
        if denial is not None:
            log.info("Message from %s (user %s, vhost %s) to %r refused: %s", link.connection.peer,
                     grant.user, grant.vhost, address, denial.description)
        return denial

    def _close_link(self, link: Any, denial: Denial) -> None:
        handle = link.handle
        set_condition(lib.pn_link_condition(handle), denial.condition, denial.description)
        lib.pn_link_close(handle)
        self.adaptor.dirty.add(link.connection)
        if self.adaptor.on_link_refused is not None:
            self.adaptor.on_link_refused(link)


def routed_address(data: bytes, strip_in: bool) -> str | None:
    """The address an anonymous link's message is routed by, unnormalised: x-opt-qd.to where
    the link's annotations are trusted (amqp/inbound.py's rule), else properties.to."""
    ma_start, ma_end, props_start = find_sections(data)
    if ma_start >= 0 and not strip_in:
        to_override = read_annotations(data, ma_start, ma_end).to_override
        if to_override is not None:
            return to_override
    return read_to(data, props_start)


def read_user_id(data: bytes) -> bytes | None:
    """properties.user-id (2nd field, binary) or None when absent."""
    _, _, props_start = find_sections(data)
    if props_start < 0:
        return None
    try:
        vpos = section_value(data, props_start, PROPERTIES)
        code = data[vpos]
        if code == 0xC0:
            count, p = data[vpos + 2], vpos + 3
        elif code == 0xD0:
            count, p = u32(data, vpos + 5), vpos + 9
        else:
            return None
        if count < 2:
            return None
        p = skip_value(data, p)
        code = data[p]
        if code == 0xA0:
            return bytes(data[p + 2:p + 2 + data[p + 1]])
        if code == 0xB0:
            return bytes(data[p + 5:p + 5 + u32(data, p + 1)])
        if code in (0xA1, 0xA3):  # tolerated: a user-id sent as a string or symbol
            return bytes(data[p + 2:p + 2 + data[p + 1]])
        return None
    except IndexError:
        raise MessageFormatError("truncated properties") from None


def install(server: Any, engine: PolicyEngine) -> ConnectionPolicer:
    """Give a server's accept, endpoint and delivery hooks one policer over ``engine``."""
    policer = ConnectionPolicer(engine, server.adaptor)
    server.policer = policer
    server.endpoints.policer = policer
    server.adaptor.policer = policer
    server.adaptor.on_link_refused = server.endpoints.link_closed_locally
    return policer
