"""Resilient outgoing connections, like the federation links of the reference
(broker-federation.md): retry after 2 s, doubling to at most 64 s, then every 64 s; no
retry after an authentication failure."""

from __future__ import annotations

import logging
import time
from typing import Callable

from ..wakeups.timers import Timer
from .connection import AmqpConnection, ListenerSettings
from .connector_failover import FAILOVER_RETRY_S, FailoverPlaces
from .resolver import Resolution, resolve
from .tls import release_domain, retain_domain

log = logging.getLogger("qdrouter.CONN_MGR")

WAITING = "Waiting"
CONNECTING = "Connecting"
OPERATIONAL = "Operational"
FAILED = "Failed"
CLOSED = "Closed"

FIRST_RETRY_S = 2.0
MAX_RETRY_S = 64.0
# A connection that has not opened (TCP, TLS, SASL and AMQP open) by then is given up and
# dialled again, the name resolved afresh: a peer replaced under the same name (a restarted
# pod with a new IP) must not leave the connector waiting for the kernel to give up on it.
OPEN_TIMEOUT_S = 10.0
# How often the loop looks whether a host name has been resolved (in another thread).
RESOLVE_POLL_S = 0.05


class Connector:
    def __init__(self, server: object, host: str, port: int, settings: ListenerSettings,
                 on_up: Callable[[AmqpConnection], None] | None = None,
                 on_down: Callable[[AmqpConnection], None] | None = None,
                 on_replace: Callable[[AmqpConnection, AmqpConnection], None] | None = None) -> None:
        self.server = server
        self.host = host
        self.port = port
        # Where it dials: host:port, and the servers of a peer's failover list once it names one.
        self.places = FailoverPlaces(host, port)
        self.settings = settings
        self.on_up = on_up
        self.on_down = on_down
        # (old, new): a replacement made with newer TLS material takes over (tls_rotation.py).
        self.on_replace = on_replace
        self.status = WAITING
        self.message = ""
        self.connection: AmqpConnection | None = None
        self.retry_delay = FIRST_RETRY_S
        self.attempts = 0
        self._timer: Timer | None = None
        self._open_timer: Timer | None = None
        self._resolution: Resolution | None = None
        self._resolution_started = 0.0
        # The connector holds its SSL domain while it may connect (amqp/connections/tls.py).
        self._holds_domain = settings.ssl_domain is not None
        if self._holds_domain:
            retain_domain(settings.ssl_domain)

    def start(self) -> None:
        self._attempt()

    def hold(self) -> None:
        """Dial no more (the router drains, qdrouter/drain.py); a connection up stays up."""
        self.status = CLOSED
        self.message = "Router draining: not connecting again"
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def stop(self) -> None:
        if self._holds_domain:
            self._holds_domain = False
            release_domain(self.settings.ssl_domain)
        self.status = CLOSED
        self.message = "Connector deleted"
        if self._timer is not None:
            self._timer.cancel()
        self._cancel_open_timer()
        connection = self.connection
        if connection is not None:
            self.server.close_connection(connection, "amqp:connection:forced",  # type: ignore[attr-defined]
                                         "Connector deleted")

    def _attempt(self) -> None:
        if self.status == CLOSED:
            return
        self._timer = None
        self.attempts += 1
        self.status = CONNECTING
        _, self.host, self.port = self.places.current
        try:
            self._resolution = resolve(self.host, self.port)
        except Exception as error:  # the retry series must go on (below)
            self._internal_error(error)
            return
        self._resolution_started = time.monotonic()
        self._connect_when_resolved(self._resolution)

    def _connect_when_resolved(self, resolution: Resolution) -> None:
        """The retry series is a chain of timers: a failure in one link of it is contained
        (amqp/loop/fault_boundary.py) and the connector retries as after any failed attempt."""
        try:
            self._connect_or_wait(resolution)
        except Exception as error:
            self._internal_error(error)

    def _internal_error(self, error: Exception) -> None:
        self.server.faults.unattributed(  # type: ignore[attr-defined]
            f"in connector {self.settings.name} to {self.host}:{self.port}")
        self._failed(f"internal error: {type(error).__name__} (see the router's log)")

    def _connect_or_wait(self, resolution: Resolution) -> None:
        self._timer = None
        if self.status == CLOSED or resolution is not self._resolution:
            return
        if not resolution.done:
            if time.monotonic() - self._resolution_started > OPEN_TIMEOUT_S:
                self._failed(f"cannot resolve {self.host}: no answer within {OPEN_TIMEOUT_S:g} s")
                return
            self._timer = self.server.timers.call_later(  # type: ignore[attr-defined]
                RESOLVE_POLL_S, lambda: self._connect_when_resolved(resolution))
            return
        if resolution.error is not None or resolution.result is None:
            error = resolution.error
            self._failed(f"cannot resolve {self.host}: {getattr(error, 'strerror', None) or error}")
            return
        try:
            connection = self.server.connect(  # type: ignore[attr-defined]
                self.host, self.port, self.settings, resolution.result, owner=self)
        except OSError as error:
            self._failed(f"cannot connect to {self.host}:{self.port}: {error.strerror or error}")
            return
        self.connection = connection
        self._open_timer = self.server.timers.call_later(  # type: ignore[attr-defined]
            OPEN_TIMEOUT_S, lambda: self._open_timed_out(connection))

    def adopt(self, connection: AmqpConnection) -> AmqpConnection | None:
        """An open replacement (made with newer TLS material, amqp/connections/tls_rotation.py) becomes the
        connector's connection; the old one is returned, the caller's to drain and close (its
        closing no longer counts as the connector's)."""
        old = self.connection
        if old is not None:
            old.hand_to(None)
        connection.hand_to(self)
        self.connection = connection
        return old

    def _open_timed_out(self, connection: AmqpConnection) -> None:
        self._open_timer = None
        if self.connection is connection and self.status == CONNECTING:
            self.server.abort_connection(  # type: ignore[attr-defined]
                connection, f"connection to {self.host}:{self.port} not opened within {OPEN_TIMEOUT_S:g} s")

    def _cancel_open_timer(self) -> None:
        if self._open_timer is not None:
            self._open_timer.cancel()
            self._open_timer = None

    # ---- ConnectionOwner (amqp/connections/connection_owner.py) ----------------------------
    def connection_opened(self, connection: AmqpConnection) -> None:
        self._cancel_open_timer()
        self.status = OPERATIONAL
        self.message = "Connection Opened"
        self.retry_delay = FIRST_RETRY_S
        self.places.learn(connection.remote_failover_list())
        log.info("Connector %s to %s:%d is operational", self.settings.name, self.host, self.port)
        if self.on_up is not None:
            self.on_up(connection)

    def connection_closed(self, connection: AmqpConnection) -> None:
        self._cancel_open_timer()
        was_up = self.status == OPERATIONAL
        self.connection = None
        if was_up and self.on_down is not None:
            self.on_down(connection)
        if self.status == CLOSED:
            return
        error = connection.last_error or "connection closed"
        if "unauthorized-access" in error or "authentication" in error.lower():
            self.status = FAILED
            self.message = f"{error} (not retrying: authentication failed)"
            log.warning("Connector %s: %s", self.settings.name, self.message)
            return
        self._failed(error)

    def _failed(self, error: str) -> None:
        delay = self.retry_delay
        if self.places.has_failover:
            # As qdrouterd: the next server of the peer's failover list, a second later.
            self.places.advance()
            delay = FAILOVER_RETRY_S
        else:
            self.retry_delay = min(MAX_RETRY_S, delay * 2)
        self.status = WAITING
        _, host, port = self.places.current
        where = f" at {host}:{port}" if self.places.has_failover else ""
        self.message = f"{error}; retrying in {delay:g} s{where}"
        log.info("Connector %s: %s", self.settings.name, self.message)
        self._timer = self.server.timers.call_later(delay, self._attempt)  # type: ignore[attr-defined]
