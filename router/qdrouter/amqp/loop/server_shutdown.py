"""How the event loop stops: listeners closed, every sender told the fate of its unsettled
messages, every connection closed with an AMQP close, the loop left once they are gone (or
after the grace period), and what is left freed.  A mixin of AmqpServer (amqp/loop/server.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List

from ..bindings import proton_ffi as pn
from ..bindings.proton_ffi import lib
from ..connections.connection import AmqpConnection

if TYPE_CHECKING:
    from ..data_path.deliveries import DeliveryAdaptor
    from ..links.endpoints import EndpointHandler


class ServerShutdown:
    collector: Any
    adaptor: DeliveryAdaptor
    endpoints: EndpointHandler
    by_fd: Dict[int, AmqpConnection]
    _stopping: bool
    _deadline: float
    _released: List[AmqpConnection]
    _flush_sends: Callable[[], None]
    _close_listeners: Callable[[], None]
    _release_finished: Callable[[], None]
    _process_events: Callable[[], None]
    _flush_output: Callable[[], None]

    # ---- shutdown ----------------------------------------------------------------------
    def stop(self, grace_s: float = 2.0) -> None:
        """Stop accepting, close every connection with a proper AMQP close, then return
        from run() once they are gone (or after the grace period)."""
        if self._stopping:
            return
        self._stopping = True
        self._close_listeners()
        connections = list(self.by_fd.values())
        # Every sender hears the fate of its unsettled messages before any connection closes,
        # whatever order the connections were opened in: what consumers (or other routers)
        # were given goes back as modified, what was still waiting here as released.
        for connection in connections:
            self.endpoints.detach_consumers(connection)
        for connection in connections:
            self.endpoints.release_waiting(connection)
        self._flush_sends()
        for connection in connections:
            condition = lib.pn_connection_condition(connection.pn_connection)
            pn.set_condition(condition, "amqp:connection:forced", "Router is shutting down")
            self.endpoints.detach_all(connection)
            lib.pn_connection_close(connection.pn_connection)
            self.adaptor.dirty.add(connection)
        self._deadline = time.monotonic() + grace_s
        self._process_events()
        self._flush_output()

    def shutdown(self) -> None:
        """After run(): frees every connection left (past the grace period) and the collector,
        once. The process usually exits next; a router embedded in a longer process (tests)
        leaves nothing of proton's behind."""
        self._close_listeners()
        self._released.extend(c for c in self.by_fd.values() if c not in self._released)
        self._release_finished()
        if self.collector is not None:
            lib.pn_collector_free(self.collector)
            self.collector = None
