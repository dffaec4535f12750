"""The event loop's sockets: listeners opened and closed, connections accepted on them and
started outward (non-blocking), each registered with the poller.  A mixin of AmqpServer
(amqp/loop/server.py)."""

from __future__ import annotations

import errno
import logging
import os
import socket
from typing import TYPE_CHECKING, Any, Dict, Iterator, Tuple

from ...listen_socket import ListenSocketError, listening_socket
from ..bindings import proton_ffi as pn
from ..bindings.proton_ffi import lib
from ..connections.connection import AmqpConnection, ListenerSettings
from ..connections.connection_owner import ConnectionOwner
from ..connections.tls import release_domain, retain_domain
from ..wakeups.poller import EVENT_READ, EVENT_WRITE

if TYPE_CHECKING:
    from ..data_path.deliveries import DeliveryAdaptor
    from ..links.endpoints import EndpointHandler
    from ..links.policing import ConnectionPolicer
    from ..wakeups.poller import Poller

log = logging.getLogger("qdrouter.SERVER")


class ListenerError(Exception):
    pass


class ServerSockets:
    router_id: str
    collector: Any
    adaptor: DeliveryAdaptor
    endpoints: EndpointHandler
    policer: ConnectionPolicer | None
    selector: Poller
    listeners: Dict[int, Tuple[socket.socket, ListenerSettings]]
    by_fd: Dict[int, AmqpConnection]
    _ids: Iterator[int]

    # ---- listeners ---------------------------------------------------------------------
    def listen(self, host: str, port: int, settings: ListenerSettings) -> Tuple[str, int, int]:
        """Open a listening socket; returns (host, port, fd) as bound (port 0 picks one)."""
        try:
            sock = listening_socket(host, port, settings.name, 128)
        except ListenSocketError as error:
            raise ListenerError(str(error)) from None
        self.listeners[sock.fileno()] = (sock, settings)
        if settings.ssl_domain is not None:
            retain_domain(settings.ssl_domain)  # a listener holds its SSL domain (amqp/connections/tls.py)
        self.selector.register(sock, EVENT_READ)
        bound = sock.getsockname()
        log.info("Listening on %s:%d (%s)", bound[0], bound[1], settings.name)
        return bound[0], bound[1], sock.fileno()

    def close_listener(self, fd: int) -> None:
        """Stop accepting on one listener; its connections stay up, as in qdrouterd."""
        entry = self.listeners.pop(fd, None)
        if entry is None:
            return
        sock, settings = entry
        try:
            self.selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()
        if settings.ssl_domain is not None:
            release_domain(settings.ssl_domain)
        log.info("Stopped listening (%s)", settings.name)

    def connect(self, host: str, port: int, settings: ListenerSettings,
                resolved: Tuple[Any, ...] | None = None,
                owner: ConnectionOwner | None = None) -> AmqpConnection:
        """Start an outgoing connection (non-blocking) to ``resolved`` (a getaddrinfo entry
        for host:port; looked up here, blocking, when not given), which tells ``owner`` when
        it opens and closes; raises OSError if it cannot start."""
        if resolved is None:
            resolved = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)[0]
        family, kind, proto, _, address = resolved
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        result = sock.connect_ex(address)
        if result not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            sock.close()
            raise OSError(result, os.strerror(result))
        connection = AmqpConnection(next(self._ids), sock, f"{host}:{port}", settings, self.collector,
                                    self.router_id, client=True, owner=owner)
        self.endpoints.connections[connection.pn_connection] = connection
        self.by_fd[connection.fileno] = connection
        self.selector.register(connection.fileno, EVENT_WRITE)
        connection.interest = EVENT_WRITE
        log.info("Connecting to %s:%d (%s)", host, port, settings.name)
        return connection

    def close_connection(self, connection: AmqpConnection, condition: str, description: str) -> None:
        pn.set_condition(lib.pn_connection_condition(connection.pn_connection), condition, description)
        self.endpoints.detach_all(connection)
        lib.pn_connection_close(connection.pn_connection)
        self.adaptor.dirty.add(connection)

    def _accept(self, fd: int) -> None:
        listening, settings = self.listeners[fd]
        for _ in range(64):
            try:
                sock, peer = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                log.warning("Accept failed on %s: %s", settings.name, error)
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer_text = f"{peer[0]}:{peer[1]}"
            connection = AmqpConnection(
                next(self._ids), sock, peer_text, settings, self.collector, self.router_id
            )
            self.endpoints.connections[connection.pn_connection] = connection
            self.by_fd[connection.fileno] = connection
            self.selector.register(connection.fileno, EVENT_READ)
            connection.interest = EVENT_READ
            self.adaptor.dirty.add(connection)
            log.info("Accepted connection %d from %s on %s", connection.identity, peer_text, settings.name)
            if self.policer is not None:
                self.policer.accepted(connection)

    def _close_listeners(self) -> None:
        for fd in list(self.listeners):
            self.close_listener(fd)
