"""Live TLS (qdmesh): connections made with an sslProfile ordinal below its oldestValidOrdinal
are replaced.

Connections a listener accepted from clients are closed with amqp:connection:forced naming the
profile and ordinals: the client reconnects, with the new material. Inter-router and edge
connections a listener accepted are left to the peer's connector, which replaces them.

The router's own connections (connectors: inter-router, edge uplink, route-container) are
replaced make-before-break, one at a time: a second connection is dialled with the new
material; once it is open (for an inter-router connection, once the peer router is a two-way
neighbour through it) it takes the connector's place. The old one then stops carrying new
deliveries: an inter-router one has its qd.router links detached at both ends, so both
routers route over the new connection; an edge uplink's links and a route container's
auto-links are attached on the new one, new link-routed attaches go there, and the old one's
links take nothing new (amqp/connections/connection_retire.py). It is closed once nothing on it is
unsettled (link-routed deliveries included) and its peer gave back the credit it held, or
after DRAIN_S; what is still unsettled then gets the outcome any lost connection gives (the
sender hears, nothing is dropped silently)."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, Callable, Deque, Dict

from ...core.links import CONTROL
from ..bindings.proton_ffi import LOCAL_CLOSED, lib
from .connection import AmqpConnection
from .connection_retire import credit_out
from .connector import OPERATIONAL, Connector
from .resolver import Resolution, resolve

log = logging.getLogger("qdrouter.CONN_MGR")

FORCED = "amqp:connection:forced"
POLL_S = 0.1
# A replacement not ready by then is given up (the old connection stays) and tried again later.
READY_TIMEOUT_S = 30.0
RETRY_S = 5.0
# How long an old connection's unsettled deliveries are given to settle before it is closed.
DRAIN_S = 30.0


def unsettled(connection: AmqpConnection) -> int:
    return sum(len(link.unsettled) for link in connection.links.values())


class TlsRotation:
    """Replaces the connections of sslProfiles whose oldestValidOrdinal went up."""

    def __init__(self, server: Any, connectors: Dict[str, Connector],
                 reachable: Callable[[AmqpConnection], bool], handover_s: float = 0.0) -> None:
        self.server = server
        self.connectors = connectors  # the router's, by entity identity (live view)
        self.reachable = reachable    # inter-router: the peer router is a neighbour through it
        # Inter-router: how long the replacement stays two-way before the old one stops routing.
        # We see the peer two-way once its HELLO lists us; it sees us so once our next HELLO
        # (within one hello interval) lists it: two intervals and it routes over the new one too.
        self.handover_s = handover_s
        self._queue: Deque[Connector] = deque()
        self._busy = False
        self.replaced = 0             # connections replaced (tests, logs)

    def retire(self, name: str, oldest: int) -> None:
        """sslProfile ``name`` now has oldestValidOrdinal ``oldest``."""
        for connection in list(self.server.by_fd.values()):
            if not _outdated(connection, name, oldest) or connection.client:
                continue
            if connection.settings.role in ("inter-router", "edge"):
                continue  # the peer's connector replaces it
            log.info("Connection %d: made with sslProfile %r ordinal %s, below its oldestValidOrdinal "
                     "%d: closed", connection.identity, name, connection.tls_ordinal, oldest)
            self.server.close_connection(
                connection, FORCED, f"sslProfile {name!r}: this connection was made with ordinal "
                                    f"{connection.tls_ordinal}, the oldest valid is now {oldest}: "
                                    f"reconnect to use the new TLS material")
        for connector in self.connectors.values():
            tls = connector.settings.tls
            if tls is not None and tls.name == name and connector not in self._queue:
                self._queue.append(connector)
        self._next()

    def _call_later(self, delay: float, callback: Callable[[], None]) -> None:
        self.server.timers.call_later(delay, lambda: self._run(callback))

    def _run(self, callback: Callable[[], None]) -> None:
        """A step that fails (a fault of the router's own, counted by the timers' fault
        boundary) must not leave later replacements waiting for it forever."""
        try:
            callback()
        except Exception:
            self._busy = False
            raise

    # ---- one connector at a time -----------------------------------------------------------
    def _next(self) -> None:
        while not self._busy and self._queue:
            connector = self._queue.popleft()
            old = connector.connection
            tls = connector.settings.tls
            if old is None or old.closed or tls is None or connector not in self.connectors.values():
                continue  # its next connection is made with the new material
            if old.tls_ordinal is None or old.tls_ordinal >= tls.oldest_valid:
                continue
            if connector.status != OPERATIONAL:
                # Not open yet: dialled again, now with the new material.
                self.server.abort_connection(old, f"sslProfile {tls.name!r} updated while connecting")
                continue
            self._busy = True
            self._dial(connector, old, resolve(connector.host, connector.port), time.monotonic())

    def _done(self) -> None:
        self._busy = False
        self._call_later(0, self._next)

    def _later(self, connector: Connector) -> None:
        """Not replaced this time: tried again after RETRY_S (the old connection stays up)."""
        self._busy = False
        self._queue.append(connector)
        self._call_later(RETRY_S, self._next)

    def _dial(self, connector: Connector, old: AmqpConnection, resolution: Resolution,
              started: float) -> None:
        if connector.connection is not old or connector not in self.connectors.values():
            self._done()
            return
        if not resolution.done:
            if time.monotonic() - started > READY_TIMEOUT_S:
                self._later(connector)
            else:
                self._call_later(POLL_S, lambda: self._dial(connector, old, resolution, started))
            return
        if resolution.error is not None or resolution.result is None:
            log.warning("Connector %s: cannot resolve %s for a replacement connection: %s",
                        connector.settings.name, connector.host, resolution.error)
            self._later(connector)
            return
        state = _Replacement(connector)
        try:
            new = self.server.connect(connector.host, connector.port, connector.settings, resolution.result,
                                      owner=state)
        except OSError as error:
            log.warning("Connector %s: replacement connection failed: %s", connector.settings.name, error)
            self._later(connector)
            return
        log.info("Connector %s: replacing connection %d (sslProfile ordinal %s) with connection %d",
                 connector.settings.name, old.identity, old.tls_ordinal, new.identity)
        self._wait_ready(connector, old, new, state, time.monotonic())

    def _wait_ready(self, connector: Connector, old: AmqpConnection, new: AmqpConnection,
                    state: _Replacement, started: float) -> None:
        if new.closed or connector.connection is not old or connector not in self.connectors.values():
            if not new.closed:
                self.server.close_connection(new, FORCED, "replacement no longer needed")
            else:
                log.warning("Connector %s: replacement connection %d failed: %s", connector.settings.name,
                            new.identity, new.last_error or "closed")
            if connector.connection is old:
                self._later(connector)
            else:
                self._done()
            return
        inter_router = connector.settings.role == "inter-router"
        ready = state.opened and (not inter_router or self.reachable(new))
        now = time.monotonic()
        if ready and inter_router:
            state.ready_at = state.ready_at or now
            ready = now - state.ready_at >= self.handover_s
        elif not ready:
            state.ready_at = 0.0
        if not ready:
            if now - started > READY_TIMEOUT_S:
                log.warning("Connector %s: replacement connection %d not ready within %g s; keeping "
                            "connection %d", connector.settings.name, new.identity, READY_TIMEOUT_S,
                            old.identity)
                self.server.close_connection(new, FORCED, "replacement not ready in time")
                self._later(connector)
            else:
                self._call_later(
                    POLL_S, lambda: self._wait_ready(connector, old, new, state, started))
            return
        connector.adopt(new)
        old.hand_to(_Retired(connector.on_down) if connector.on_down is not None else None)
        if connector.settings.role == "inter-router":
            self._stop_routing(old)
        if connector.on_replace is not None:
            connector.on_replace(old, new)  # an edge uplink moves its links to the new one
        self._drain(connector, old, time.monotonic())

    def _stop_routing(self, old: AmqpConnection) -> None:
        """Both routers stop sending on the old connection: its qd.router links go (each end
        then routes over the replacement); its qd.router-data links stay for what is in flight."""
        endpoints = self.server.endpoints
        for link in [link for link in old.links.values() if link.kind == CONTROL]:
            handle = link.handle
            endpoints.link_closed_locally(link)
            if handle is not None and not lib.pn_link_state(handle) & LOCAL_CLOSED:
                lib.pn_link_close(handle)
        self.server.adaptor.dirty.add(old)

    def _drain(self, connector: Connector, old: AmqpConnection, started: float) -> None:
        if old.closed:
            self._finished(connector, old)
            return
        left = unsettled(old) + credit_out(old) + self._routed_unsettled(old)
        if left and time.monotonic() - started < DRAIN_S:
            self._call_later(POLL_S, lambda: self._drain(connector, old, started))
            return
        if left:
            log.warning("Connection %d: %d deliveries still unsettled after %g s: closed all the same "
                        "(their senders get the outcome of a lost connection)", old.identity, left, DRAIN_S)
        self.server.close_connection(old, FORCED, "replaced by a connection made with newer TLS material")
        self._finished(connector, old)

    def _routed_unsettled(self, connection: AmqpConnection) -> int:
        link_router = self.server.endpoints.link_router
        return 0 if link_router is None else int(link_router.unsettled_on(connection))

    def _finished(self, connector: Connector, old: AmqpConnection) -> None:
        self.replaced += 1
        log.info("Connector %s: connection %d replaced", connector.settings.name, old.identity)
        self._done()


def _outdated(connection: AmqpConnection, name: str, oldest: int) -> bool:
    """Made with older material of the profile (a plain client of a listener that also takes
    TLS was not: the profile is not its business)."""
    tls = connection.settings.tls
    return (not connection.closed and connection.tls_ordinal is not None and tls is not None
            and tls.name == name and connection.tls_ordinal < oldest
            and bool(lib.pn_transport_is_encrypted(connection.transport)))


class _Replacement:
    """A replacement connection's owner until its connector adopts it: whoever hears the
    connector's connections open hears this one open, and close if it goes before it takes
    over (an edge uplink)."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector
        self.opened = False
        # When it first looked ready (monotonic), for the hand-over delay; 0.0: not yet.
        self.ready_at = 0.0

    def connection_opened(self, connection: AmqpConnection) -> None:
        self.opened = True
        if self.connector.on_up is not None:
            self.connector.on_up(connection)

    def connection_closed(self, connection: AmqpConnection) -> None:
        if self.opened and self.connector.on_down is not None:
            self.connector.on_down(connection)


class _Retired:
    """A replaced connection's owner while it drains: whoever heard it open hears it close."""

    def __init__(self, on_down: Callable[[AmqpConnection], None]) -> None:
        self.on_down = on_down

    def connection_opened(self, connection: AmqpConnection) -> None:
        pass

    def connection_closed(self, connection: AmqpConnection) -> None:
        self.on_down(connection)
