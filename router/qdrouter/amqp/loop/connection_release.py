"""How the event loop lets connections go: at the end of a batch, their remaining events
handled first, their links out of the core, their sockets and proton objects released; or
dropped at once, without the close handshake. A mixin of AmqpServer (amqp/loop/server.py)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, List

from ..bindings.proton_ffi import lib
from ..connections.connection import AmqpConnection

if TYPE_CHECKING:
    from ..data_path.deliveries import DeliveryAdaptor
    from ..links.endpoints import EndpointHandler
    from ..links.policing import ConnectionPolicer
    from .fault_boundary import FaultBoundary

log = logging.getLogger("qdrouter.SERVER")


class ConnectionRelease:
    collector: Any
    adaptor: DeliveryAdaptor
    endpoints: EndpointHandler
    faults: FaultBoundary
    policer: ConnectionPolicer | None
    by_fd: Dict[int, AmqpConnection]
    _released: List[AmqpConnection]
    _set_interest: Callable[[AmqpConnection, int], None]
    _flush_output: Callable[[], None]
    _dispatch_one: Callable[[Any], None]

    def drop_connection(self, connection: AmqpConnection, reason: str) -> None:
        """Drop a connection without the close handshake, at the end of this batch (never in
        the middle of one: releasing drains the collector, and the batch is still in it)."""
        if connection.closed or connection in self._released:
            return
        connection.last_error = reason
        connection.input_closed = True
        self._released.append(connection)

    def abort_connection(self, connection: AmqpConnection, reason: str) -> None:
        """Drop a connection at once, without the AMQP close handshake: its peer is not
        answering (a connect or an open that never completed)."""
        if connection.closed or connection in self._released:
            return
        connection.last_error = reason
        self._released.append(connection)
        self._release_finished()

    def _release_finished(self) -> None:
        if not self._released:
            self._free_closed()
            return
        # Taken as they are: a connection dropped while these are released (a failure in the
        # drain below) waits for the next call, its own events drained first like these.
        released = self._released
        self._released = []
        # Events that still name these connections go before the connections are freed;
        # events of other connections (a request that arrived in the same read, say) are
        # handled first, never dropped.
        self._drain_events_of(released)
        # Closed links and sessions before their connections (pn_connection_release frees
        # whatever of a connection is left: freeing one of its links after would be twice).
        self._free_closed()
        for connection in released:
            if connection.closed:
                continue
            try:
                self._release_one(connection)
            except Exception:
                self.faults.release_failed(connection)
                self._forget_failed_release(connection)
            if connection.owner is not None:
                try:
                    connection.owner.connection_closed(connection)  # its connector retries
                except Exception:
                    self.faults.unattributed(f"telling connection {connection.identity}'s owner it closed")
        self._flush_output()

    def _free_closed(self) -> None:
        try:
            self.endpoints.free_closed()
        except Exception:
            self.faults.unattributed("freeing closed links and sessions")

    def _release_one(self, connection: AmqpConnection) -> None:
        self.endpoints.detach_all(connection)
        self.adaptor.flush_credit()
        self._set_interest(connection, 0)
        self.endpoints.connections.pop(connection.pn_connection, None)
        self.by_fd.pop(connection.fileno, None)
        connection.release()
        if self.policer is not None:
            self.policer.released(connection)
        log.info("Connection %d %s %s closed%s", connection.identity,
                 "to" if connection.client else "from", connection.peer,
                 f": {connection.last_error}" if connection.last_error else "")

    def _forget_failed_release(self, connection: AmqpConnection) -> None:
        """Releasing raised part-way: the loop forgets the connection all the same (its
        proton objects may leak; freeing them twice would be worse) and closes its socket."""
        self.endpoints.connections.pop(connection.pn_connection, None)
        self.by_fd.pop(connection.fileno, None)
        try:
            self._set_interest(connection, 0)
        except Exception:
            connection.interest = 0
        connection.close_socket()

    def _drain_events_of(self, released: List[AmqpConnection]) -> None:
        collector = self.collector
        gone = {connection.pn_connection for connection in released}
        while True:
            event = lib.pn_collector_peek(collector)
            if not event:
                return
            if lib.pn_event_connection(event) not in gone:
                try:
                    self._dispatch_one(event)
                except Exception as error:
                    self.faults.raw_event_failed(event, error)
            lib.pn_collector_pop(collector)
