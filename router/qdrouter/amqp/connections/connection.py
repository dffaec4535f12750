"""One AMQP connection's plumbing: a non-blocking socket pumped into and out of a proton
transport. No routing decisions here."""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Dict, List, Tuple

from ..bindings.proton_ffi import c_string, ffi, lib
from ..bindings.proton_shim import QD_INPUT_OVER, QD_WOULD_BLOCK, read_socket, write_socket
from .connection_owner import ConnectionOwner
from .connector_failover import failover_list
from .listener_settings import ListenerSettings
from .open_properties import put_open_properties
from .sasl_builtin import builtin_sasl_suffices, use_builtin_sasl
from .tls import certificate_uid, release_domain, retain_domain

# ListenerSettings: the settings a connection is made with, named here beside it.
__all__ = ["COST_PROPERTY", "AmqpConnection", "ListenerSettings", "configure_sasl", "read_int_property"]

# Bytes read from one connection per loop turn, so one busy peer cannot starve the others.
READ_BUDGET = 256 * 1024



# Cyrus SASL's configuration (router saslConfigDir / saslConfigName): process-wide in Cyrus,
# so set once for every connection.
SASL_CONFIG: Dict[str, str] = {}


def configure_sasl(config_dir: str | None, config_name: str | None) -> None:
    SASL_CONFIG.clear()
    if config_dir:
        SASL_CONFIG["dir"] = config_dir
    if config_name:
        SASL_CONFIG["name"] = config_name


class AmqpConnection:
    """Socket <-> proton transport. The transport's events land in the shared collector."""

    # Slots rather than a __dict__: a router may hold tens of thousands of connections
    # (bench/README.md, "One router at scale"). __weakref__: the fault boundary's WeakSet.
    __slots__ = (
        "__weakref__",
        "accepted_at",
        "admitted",
        "client",
        "closed",
        "connecting",
        "container_id",
        "fileno",
        "identity",
        "input_closed",
        "input_held",
        "input_held_count",
        "interest",
        "last_error",
        "links",
        "next_tick_ms",
        "out_blocked",
        "out_blocked_count",
        "out_queued",
        "outbound",
        "owner",
        "peer",
        "pn_connection",
        "policy",
        "remote_container",
        "remote_cost",
        "retiring",
        "settings",
        "sock",
        "socket_open",
        "ssl_domain",
        "tls_ordinal",
        "transport",
        "user",
        "want_write",
    )

    def __init__(
        self,
        identity: int,
        sock: socket.socket,
        peer: str,
        settings: ListenerSettings,
        collector: Any,
        container_id: str,
        client: bool = False,
        owner: ConnectionOwner | None = None,
    ) -> None:
        self.identity = identity
        self.fileno = sock.fileno()
        self.sock: socket.socket | None = sock
        self.socket_open = True
        self.peer = peer
        self.settings = settings
        self.container_id = container_id
        self.transport = lib.pn_transport()
        self.pn_connection = lib.pn_connection()
        # Links of this connection by proton pointer, so a dropped socket can detach them all.
        self.links: Dict[Any, Any] = {}
        self.want_write = False
        # Output handed to proton and not yet written, and whether that has blocked this
        # connection's consumers (amqp/data_path/outbound.py, which sets ``outbound`` to itself once
        # it counts anything here).
        self.out_queued = 0
        self.out_blocked = False
        # Times it was blocked (management's outputBlockedCount: a consumer that keeps
        # falling behind shows here after it has caught up).
        self.out_blocked_count = 0
        self.outbound: Any = None
        # When proton next needs a tick (ms, its clock; 0: at the next turn). AmqpServer._tick.
        self.next_tick_ms = 0
        # The selector events the server registered this socket for (0: none); see
        # AmqpServer._set_interest.
        self.interest = 0
        self.closed = False
        self.input_closed = False
        # Streamed messages holding this connection's input back (amqp/data_path/streaming.py): its
        # socket is not read while any do.
        self.input_held = 0
        # Times its input was held back (management's inputHeldCount).
        self.input_held_count = 0
        self.remote_container: str | None = None
        # When it was accepted (or started connecting); opened_at derives the wall-clock time,
        # one float per connection fewer.
        self.accepted_at = time.monotonic()
        self.user: str | None = None
        # Policy: counted against the global connection limit, and the vhost grant once open.
        self.admitted = False
        self.policy: Any = None
        # Outgoing (connector) connections: still connecting, and who to tell about it.
        self.client = client
        self.connecting = client
        self.last_error: str | None = None
        self.owner = owner
        # Replaced by a connection made with newer TLS material (amqp/connections/tls_rotation.py): it only
        # finishes what is in flight, so its producers get no more credit.
        self.retiring = False
        # The domain this connection's TLS was made from, held until release() (amqp/connections/tls.py).
        self.ssl_domain = settings.ssl_domain
        # The sslProfile ordinal its TLS was made with (None: plain); see amqp/connections/tls_rotation.py.
        self.tls_ordinal: int | None = None
        self.remote_cost: int | None = None
        self._secure_transport(settings, client, peer)
        self._open_connection(settings, client, peer, container_id, collector)
        if not client:
            # An accepted connection keeps only its descriptor (closed by close_socket()): the
            # socket object would be 0.09 KB more per connection, and the loop reads and writes
            # the descriptor in C. An outgoing one keeps the object, to ask how its connect
            # went. Detached last, so that if anything above raised, the object still closes it.
            sock.detach()
            self.sock = None

    def _secure_transport(self, settings: ListenerSettings, client: bool, peer: str) -> None:
        """SASL and TLS on the transport, as the listener's or connector's settings ask."""
        transport = self.transport
        if not client:
            # Before pn_sasl: proton fixes the SASL layer's side when it is created.
            lib.pn_transport_set_server(transport)
        sasl = lib.pn_sasl(transport)
        if not client and builtin_sasl_suffices(settings.sasl_mechanisms, settings.authenticate_peer,
                                                "dir" in SASL_CONFIG):
            use_builtin_sasl(transport)  # not Cyrus: 6 KB less per connection (sasl_builtin.py)
        if SASL_CONFIG:
            if "dir" in SASL_CONFIG:
                lib.pn_sasl_config_path(sasl, SASL_CONFIG["dir"].encode())
            if "name" in SASL_CONFIG:
                lib.pn_sasl_config_name(sasl, SASL_CONFIG["name"].encode())
        lib.pn_sasl_allowed_mechs(sasl, settings.sasl_mechanisms.encode())
        # Plain-text mechanisms over an unencrypted socket only where encryption is not required.
        lib.pn_sasl_set_allow_insecure_mechs(sasl, not settings.require_encryption)
        if settings.ssl_domain is not None:
            self.tls_ordinal = settings.tls.ordinal if settings.tls is not None else 0
            retain_domain(settings.ssl_domain)
            ssl = lib.pn_ssl(transport)
            lib.pn_ssl_init(ssl, settings.ssl_domain, ffi.NULL)
            if client and settings.verify_hostname:
                lib.pn_ssl_set_peer_hostname(ssl, peer.rsplit(":", 1)[0].encode())
        if settings.require_encryption and not client:
            lib.pn_transport_require_encryption(transport, True)
        if client:
            if settings.username:
                lib.pn_connection_set_user(self.pn_connection, settings.username.encode())
            if settings.password:
                lib.pn_connection_set_password(self.pn_connection, settings.password.encode())
            lib.pn_connection_set_hostname(self.pn_connection, peer.rsplit(":", 1)[0].encode())
        else:
            lib.pn_transport_require_auth(transport, settings.authenticate_peer)

    def _open_connection(self, settings: ListenerSettings, client: bool, peer: str, container_id: str,
                         collector: Any) -> None:
        """The transport's limits, and the connection bound to it (opened at once when outgoing)."""
        transport = self.transport
        lib.pn_transport_set_idle_timeout(transport, settings.idle_timeout_ms)
        lib.pn_transport_set_max_frame(transport, settings.max_frame_size)
        lib.pn_transport_set_channel_max(transport, settings.max_sessions - 1)
        lib.pn_connection_set_container(self.pn_connection, container_id.encode())
        lib.pn_connection_collect(self.pn_connection, collector)
        lib.pn_transport_bind(transport, self.pn_connection)
        if settings.open_properties is not None:
            # Never with the cost below: openProperties are refused on inter-router connections.
            put_open_properties(self.pn_connection, settings.open_properties)
        if settings.role == "inter-router" and (client or settings.cost > 1):
            # As qdrouterd: each end's cost travels in its open (a listener's only when above
            # the default), and both ends take the larger, so the two directions agree.
            _put_int_property(lib.pn_connection_properties(self.pn_connection),
                              COST_PROPERTY, settings.cost)
        if client:
            lib.pn_connection_open(self.pn_connection)

    def hand_to(self, owner: ConnectionOwner | None) -> None:
        """``owner`` hears of this connection from now on (a connector adopting it), instead
        of the one before."""
        self.owner = owner

    def remote_failover_list(self) -> List[Tuple[str, str, int]] | None:
        """The failover-server-list the peer's open named, as (scheme, host, port)."""
        return failover_list(self.pn_connection)

    def session_settings(self, session: Any) -> None:
        """A new session of this connection, either end's: its incoming window as the
        listener's or connector's maxSessionFrames sets it (a policy may set it again)."""
        if self.settings.session_capacity:
            lib.pn_session_set_incoming_capacity(session, self.settings.session_capacity)

    @property
    def opened_at(self) -> float:
        """Wall-clock time the connection was accepted (or started connecting)."""
        return time.time() - (time.monotonic() - self.accepted_at)

    def hold_input(self) -> None:
        """One more stream holds this connection's input back (its socket is not read)."""
        self.input_held += 1
        if self.input_held == 1:
            self.input_held_count += 1

    def authenticated_user(self) -> str | None:
        """The SASL user; with the sslProfile's uidFormat, the identity in the peer's
        certificate instead (when SASL did not authenticate a named user)."""
        transport = self.transport
        user = c_string(lib.pn_transport_get_user(transport))
        tls = self.settings.tls
        if tls is not None and tls.uid_format and lib.pn_transport_is_encrypted(transport):
            mechanism = c_string(lib.pn_sasl_get_mech(lib.pn_sasl(transport)))
            if mechanism in (None, "ANONYMOUS", "EXTERNAL"):
                uid = certificate_uid(transport, tls.uid_format, tls.uid_names)
                if uid:
                    return uid
        return user

    def check_connected(self) -> bool:
        """A non-blocking connect finished: True if it worked (else last_error says why)."""
        assert self.sock is not None  # outgoing connections keep theirs
        error = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if error:
            self.last_error = f"connection to {self.peer} failed: {os.strerror(error)}"
            self.input_closed = True
            lib.pn_transport_close_tail(self.transport)
            lib.pn_transport_close_head(self.transport)
            return False
        self.connecting = False
        return True

    def read(self) -> bool:
        """Move what the socket has into the transport. False once input is over.

        Proton's input buffer holds only a frame or two, and proton processes each read as
        it lands; so read_socket reads until the socket is empty (within a budget), making
        each loop turn handle a large batch of messages with one write per peer."""
        if read_socket(self.transport, self.fileno, READ_BUDGET) == QD_INPUT_OVER:
            self.input_closed = True
            return False
        return True

    def write(self) -> None:
        """Send what the transport has to say; remembers whether the socket pushed back."""
        self.want_write = write_socket(self.transport, self.fileno) == QD_WOULD_BLOCK
        if self.out_queued and not self.want_write:
            self.outbound.drained(self)  # all it had is written: may unblock its consumers

    def finished(self) -> bool:
        """True once the peer can hear nothing more from us or we from it. After the socket's
        input ends (the peer closed or died), what could be written has been written by the
        caller; waiting for a close frame that cannot come would leave the connection's
        deliveries hanging until the idle timeout."""
        return self.input_closed or bool(lib.pn_transport_closed(self.transport))

    def tick(self, now_ms: int) -> int:
        return int(lib.pn_transport_tick(self.transport, now_ms))

    def close_socket(self) -> None:
        """Close the socket (once: its descriptor may be another connection's afterwards)."""
        if not self.socket_open:
            return
        self.socket_open = False
        try:
            if self.sock is not None:
                self.sock.close()
            else:
                os.close(self.fileno)
        except OSError:
            pass

    def release(self) -> None:
        """Free proton's objects, once; the caller has dropped every pointer into them.

        The transport goes first (unbound: it no longer holds the connection), then the
        connection: pn_connection_release frees the sessions and links still in it, and
        pn_decref drops the reference pn_connection() gave us. (Released only, it kept that
        reference: every connection leaked 1.5-5 KB.) The transport's SASL and SSL objects
        are its own and go with it. Events still in the collector (or held by the shim) keep
        their own references, so what they name stays readable until they are popped."""
        if self.closed:
            return
        self.closed = True
        self.close_socket()
        if self.outbound is not None:
            self.outbound.closed(self)
        lib.pn_transport_unbind(self.transport)
        lib.pn_decref(self.transport)
        # pn_connection_free is both of these (python-qpid-proton's cffi module lacks it).
        lib.pn_connection_release(self.pn_connection)
        lib.pn_decref(self.pn_connection)
        if self.ssl_domain is not None:
            release_domain(self.ssl_domain)
            self.ssl_domain = None


COST_PROPERTY = "qd.inter-router-cost"


def _put_int_property(data: Any, key: str, value: int) -> None:
    encoded = key.encode()
    lib.pn_data_put_map(data)
    lib.pn_data_enter(data)
    lib.pn_data_put_symbol(data, ffi.new("pn_bytes_t *", (len(encoded), ffi.new("char[]", encoded)))[0])
    lib.pn_data_put_int(data, value)
    lib.pn_data_exit(data)


def read_int_property(data: Any, key: str) -> int | None:
    """An integer from a connection's properties map, or None."""
    lib.pn_data_rewind(data)
    if not lib.pn_data_next(data) or lib.pn_data_type(data) != lib.PN_MAP:
        return None
    lib.pn_data_enter(data)
    found: int | None = None
    while lib.pn_data_next(data):
        kind = lib.pn_data_type(data)
        name = None
        if kind in (lib.PN_SYMBOL, lib.PN_STRING):
            raw = lib.pn_data_get_symbol(data) if kind == lib.PN_SYMBOL else lib.pn_data_get_string(data)
            name = bytes(ffi.buffer(raw.start, raw.size)).decode("utf-8", "replace")
        if not lib.pn_data_next(data):
            break
        if name == key:
            value_kind = lib.pn_data_type(data)
            getters = {lib.PN_INT: lib.pn_data_get_int, lib.PN_UINT: lib.pn_data_get_uint,
                       lib.PN_LONG: lib.pn_data_get_long, lib.PN_ULONG: lib.pn_data_get_ulong}
            getter = getters.get(value_kind)
            if getter is not None:
                found = int(getter(data))
    lib.pn_data_exit(data)
    lib.pn_data_rewind(data)
    return found
