"""The router's event loop: listening sockets, connection sockets and proton's collector,
driven by one epoll loop (amqp/wakeups/poller.py) in one thread."""

from __future__ import annotations

import itertools
import logging
import socket
import time
from typing import Any, Callable, Dict, List, Set, Tuple

from ...core.address_table import AddressTable
from ...core.outcomes import RELEASED
from ...tuning.loop_trace import LoopTracer, traced_if_asked
from ..bindings import proton_ffi as pn
from ..bindings.proton_ffi import lib
from ..bindings.proton_shim import (
    QD_INCOMING_DELIVERY,
    delivery_key,
    event_arrays,
    event_batches,
    pointer_key,
)
from ..connections.connection import AmqpConnection, ListenerSettings
from ..data_path.deliveries import DeliveryAdaptor
from ..links.endpoints import EndpointHandler
from ..links.link_routing import LinkRouter
from ..links.policing import ConnectionPolicer
from ..wakeups.poller import EVENT_READ, EVENT_WRITE, make_poller
from ..wakeups.timers import Timers
from .connection_release import ConnectionRelease
from .fault_boundary import FaultBoundary
from .loop_calls import LoopCalls, traced
from .server_shutdown import ServerShutdown
from .server_sockets import ListenerError, ServerSockets
from .transport_errors import transport_error

log = logging.getLogger("qdrouter.SERVER")

__all__ = ["AmqpServer", "ListenerError"]

TICK_INTERVAL_S = 0.5
# A connection with no idle timeout either way has no deadline: looked at again after this.
IDLE_RECHECK_MS = 5000


class AmqpServer(ServerSockets, ServerShutdown, ConnectionRelease):
    def __init__(self, router_id: str, table: AddressTable) -> None:
        self.router_id = router_id
        self.collector = lib.pn_collector()
        self.adaptor = DeliveryAdaptor(router_id, table)
        self.endpoints = EndpointHandler(router_id, self.adaptor)
        # Policy for user connections (amqp/links/policing.py); the router installs it
        # (police_with).
        self.policer: ConnectionPolicer | None = None
        self.selector = make_poller()
        self._wait: Callable[[float], Any] = self.selector.select  # trace_with wraps it
        self.listeners: Dict[int, Tuple[socket.socket, ListenerSettings]] = {}
        self.by_fd: Dict[int, AmqpConnection] = {}
        # Other sockets served by this loop (the HTTP listeners): fd -> handler(fd, mask).
        self.io_handlers: Dict[int, Callable[[int, int], None]] = {}
        self._ids = itertools.count(1)
        self._running = False
        self._stopping = False
        self._stop_requested = False
        self._deadline = 0.0
        self._released: List[AmqpConnection] = []
        # Where failures go: one connection closed, the rest served (amqp/loop/fault_boundary.py).
        self.faults = FaultBoundary(self)
        self.timers = Timers(on_failure=self.faults.unattributed)
        self._on_delivery = self.adaptor.delivery_handler()
        # The loop's turn and tick as run: trace_with wraps them.
        self._traced_turn: Callable[[], None] = self._turn
        self._tick_now: Callable[[float], None] = self._tick
        self._flush_sends = self.adaptor.flush_pending
        self._next_tick = 0.0
        self._next_events = event_batches(self.collector)
        self._event_arrays = event_arrays(self.collector)
        self._handlers: Dict[int, Callable[[Any], None]] = {
            pn.CONNECTION_REMOTE_OPEN: lambda e: self.endpoints.connection_opened(lib.pn_event_connection(e)),
            pn.CONNECTION_REMOTE_CLOSE: lambda e: self.endpoints.connection_closed(
                lib.pn_event_connection(e)
            ),
            pn.SESSION_REMOTE_OPEN: lambda e: self.endpoints.session_opened(lib.pn_event_session(e)),
            pn.SESSION_REMOTE_CLOSE: lambda e: self.endpoints.session_closed(lib.pn_event_session(e)),
            pn.LINK_REMOTE_OPEN: lambda e: self.endpoints.link_opened(lib.pn_event_link(e)),
            pn.LINK_REMOTE_CLOSE: lambda e: self.endpoints.link_closed(lib.pn_event_link(e)),
            pn.LINK_REMOTE_DETACH: lambda e: self.endpoints.link_closed(lib.pn_event_link(e)),
            pn.TRANSPORT_ERROR: lambda e: transport_error(self.endpoints.connections, e),
        }

    # ---- the parts the router hands its server ------------------------------------------
    def route_links_with(self, link_router: LinkRouter) -> None:
        """Link-routed attaches, and the deliveries on their links, go to ``link_router``."""
        self.endpoints.route_links_with(link_router)
        self.adaptor.route_links_with(link_router)

    def police_with(self, policer: ConnectionPolicer) -> None:
        """Connections, sessions, links and messages are checked by ``policer``."""
        self.policer = policer
        self.endpoints.police_with(policer)
        self.adaptor.police_with(policer)

    # ---- the loop ----------------------------------------------------------------------
    def run(self) -> None:
        self._running = True
        with traced_if_asked(self):  # QDROUTER_LOOP_TRACE (tuning/loop_trace.py); usually nothing
            turn = self._traced_turn
            while self._running:
                try:
                    turn()
                except Exception:  # the fault boundary's last line: the loop itself goes on
                    self.faults.unattributed("in the event loop")
        self._close_listeners()

    def trace_with(self, tracer: LoopTracer) -> None:
        """From the next turn, ``tracer`` hears of the loop's turns, waits, deliveries and
        ticks. Untraced, the loop pays nothing for this: the calls are wrapped only here."""
        calls = traced(tracer, LoopCalls(self._turn, self._wait, self._on_delivery, self._tick))
        self._traced_turn, self._wait, self._on_delivery, self._tick_now = calls

    def _turn(self) -> None:
        """One turn of the loop: sockets, the events they raised, timers, the tick."""
        by_fd = self.by_fd
        # (fd, selectors mask) (amqp/wakeups/poller.py); an error or hang-up comes as both, so each
        # is read within what the socket is registered for.
        for fd, mask in self._wait(self._timeout()):
            connection = by_fd.get(fd)
            if connection is None:
                self._other_socket(fd, mask)
                continue
            interest = connection.interest
            try:
                if connection.connecting:
                    if not connection.check_connected():
                        self._released.append(connection)
                        self._release_finished()
                        continue
                if mask & interest & EVENT_READ:
                    connection.read()
                    connection.next_tick_ms = 0  # what the peer said may move its deadline
                    self.adaptor.dirty.add(connection)
                if mask & interest & EVENT_WRITE:
                    self.adaptor.dirty.add(connection)
            except Exception as error:
                self.faults.connection_failed(connection, "reading its socket", error)
        self._process_events()
        now = time.monotonic()
        self.timers.run_due(now)
        if self.adaptor.dirty or self.adaptor.pending_sends:
            # What the timers sent (routing-protocol messages, round-trip probes) leaves now,
            # not when the loop next wakes (up to TICK_INTERVAL_S later).
            self._process_events()
        if now >= self._next_tick:
            self._tick_now(now)
        if self._stop_requested and not self._stopping:
            self.stop()
        if self._stopping and (not by_fd or now > self._deadline):
            self._running = False

    def _other_socket(self, fd: int, mask: int) -> None:
        """A listener's or an HTTP socket's readiness (not a connection's)."""
        if fd in self.listeners:
            self._accept(fd)
        elif fd in self.io_handlers:
            self.io_handlers[fd](fd, mask)

    def _timeout(self) -> float:
        deadline = self._next_tick
        timer = self.timers.next_deadline()
        if timer is not None and timer < deadline:
            deadline = timer
        return max(0.0, min(TICK_INTERVAL_S, deadline - time.monotonic()))

    def _process_events(self) -> None:
        delivery_type = pn.DELIVERY
        incoming_type = QD_INCOMING_DELIVERY
        adaptor = self.adaptor
        on_delivery = self._on_delivery
        outgoing_get = adaptor.outgoing.get
        consumer_disposition = adaptor.consumer_disposition
        other_event = self._other_event
        # Events come as (type, delivery and its link's key, or the event and 0 or None). The
        # two walks below are the same but for how they get them: on PyPy by index from the
        # shim's arrays, elsewhere from an iterable (amqp/bindings/proton_shim.py says why), and a
        # delivery's key (proton_shim.delivery_key): on PyPy the arrays give it as an int,
        # elsewhere a delivery is its own key.
        arrays = self._event_arrays
        next_events = self._next_events
        event_failed = self.faults.event_failed
        # The fault boundary (amqp/loop/fault_boundary.py): a try around each batch, not each
        # event, costs nothing until something raises. Then the event in hand names the
        # connection to close, and the batch resumes after it: no other event is lost.
        while True:
            if arrays is not None:
                count = arrays.next_count()
                if count:
                    kinds, objects, links, keys = arrays.kinds, arrays.objects, arrays.links, arrays.keys
                    start = 0
                    while start < count:
                        try:
                            for index in range(start, count):
                                kind = kinds[index]
                                if kind == incoming_type:
                                    on_delivery(objects[index], links[index], keys[index])
                                elif kind == delivery_type:
                                    key = keys[index]
                                    message = outgoing_get(key)
                                    if message is not None:
                                        consumer_disposition(message, objects[index])
                                    else:
                                        on_delivery(objects[index], links[index], key)
                                else:
                                    other_event(kind, objects[index])
                            break
                        except Exception as error:
                            event_failed(kinds[index], objects[index], links[index], error)
                            start = index + 1
                    continue
            else:
                events = next_events()
                if events is not None:
                    while True:
                        try:
                            # Resumed after a failure, the same iterator goes on from the
                            # event after the failed one.
                            for kind, item, link_key in events:
                                if kind == incoming_type:
                                    on_delivery(item, link_key, item)
                                elif kind == delivery_type:
                                    message = outgoing_get(item)
                                    if message is not None:
                                        # A consumer's disposition on a delivery of ours: its link is known.
                                        consumer_disposition(message, item)
                                    else:
                                        on_delivery(item, link_key, item)
                                else:
                                    other_event(kind, item)
                            break
                        except Exception as error:
                            event_failed(kind, item, link_key, error)
                    continue
            if not self._flush_drained():
                break
        self._release_finished()

    def _flush_drained(self) -> bool:
        """The collector drained: the sends, outcomes and credit its events left pending, then
        the output.  True when writing raised more events (a transport closing, say) to take
        in the same call."""
        adaptor = self.adaptor
        if adaptor.pending_sends or adaptor.pending_outcomes:
            try:
                self._flush_sends()
            except Exception:
                self._sends_failed()
        try:
            adaptor.flush_credit()
        except Exception:
            self.faults.unattributed("returning credit to producers")
        if not adaptor.dirty:
            return False
        self._flush_output()
        return bool(lib.pn_collector_peek(self.collector))

    def _other_event(self, kind: int, event: Any) -> None:
        """An event other than a delivery's, in the middle of a batch. The sends decided so
        far go first, so the core's view and proton's agree when it is handled."""
        adaptor = self.adaptor
        if adaptor.pending_sends or adaptor.pending_outcomes:
            try:
                self._flush_sends()
            except Exception:  # not this event's connection's fault
                self._sends_failed()
        if kind == pn.LINK_FLOW:
            pn_link = lib.pn_event_link(event)
            link = adaptor.links.get(pointer_key(pn_link))
            if link is not None:
                adaptor.on_flow(link)
            elif adaptor.link_router is not None:
                adaptor.link_router.on_flow(pn_link)
            return
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(event)

    def _sends_failed(self) -> None:
        """The batched sends raised part-way (amqp/data_path/send_queue.py): logged and counted; what
        was not sent goes back to its producers as released (nobody has seen it), and the
        queues are emptied, so the next batch does not fail on the same entry again."""
        self.faults.unattributed("sending the batch's messages")
        adaptor = self.adaptor
        try:
            for _, _, message in adaptor.pending_sends:
                if message is not None and message.out_key is None:
                    adaptor.finish_incoming(message, RELEASED)
        except Exception:
            log.error("Releasing the unsent messages failed too", exc_info=True)
        adaptor.pending_sends.clear()
        adaptor.pending_outcomes.clear()
        adaptor.arena_used = 0

    def _flush_output(self) -> None:
        dirty: Set[AmqpConnection] = self.adaptor.dirty
        while dirty:
            connection = dirty.pop()
            if connection.closed:
                continue
            if connection.connecting:
                self._set_interest(connection, EVENT_WRITE)
                continue
            try:
                connection.write()
                if connection.finished():
                    self._released.append(connection)
                    continue
                events = EVENT_READ if not (connection.input_closed or connection.input_held) else 0
                if connection.want_write:
                    events |= EVENT_WRITE
                self._set_interest(connection, events)
            except Exception as error:
                # Closing it marks it dirty again: written next turn, or dropped if it fails twice.
                self.faults.connection_failed(connection, "writing to its socket", error)
                dirty.discard(connection)

    def _set_interest(self, connection: AmqpConnection, events: int) -> None:
        # The connection remembers what its socket is registered for: asking the selector
        # (get_key) on every write cost more than the write's bookkeeping.
        registered = connection.interest
        if events == registered:
            return
        fd = connection.fileno
        try:
            if events == 0:
                self.selector.unregister(fd)
            elif registered == 0:
                self.selector.register(fd, events)
            else:
                self.selector.modify(fd, events)
        except (KeyError, ValueError):
            # Gone from the selector already (its socket closed): nothing to watch.
            if events != 0:
                raise
        connection.interest = events

    def _dispatch_one(self, event: Any) -> None:
        """One event, off the hot loop of _process_events (same handling)."""
        adaptor = self.adaptor
        kind = lib.pn_event_type(event)
        if kind == pn.TRANSPORT:
            return
        if kind == pn.DELIVERY:
            delivery = lib.pn_event_delivery(event)
            key = delivery_key(delivery)
            message = adaptor.outgoing.get(key)
            if message is not None:
                adaptor.consumer_disposition(message, delivery)
            else:
                self._on_delivery(delivery, pointer_key(lib.pn_delivery_link(delivery)), key)
            return
        self._other_event(kind, event)

    def _tick(self, now: float) -> None:
        self._next_tick = now + TICK_INTERVAL_S
        try:
            self.adaptor.forwarder.recheck_held()
            self.adaptor.streams.tick(now)
        except Exception:
            self.faults.unattributed("rechecking held credit and held producers")
        now_ms = int(now * 1000)
        for connection in list(self.by_fd.values()):
            try:
                if self.policer is not None and self.policer.overdue(connection, now):
                    # Slow or refused peers are dropped without waiting for them (slow-loris).
                    connection.input_closed = True
                    self._released.append(connection)
                    continue
                if connection.next_tick_ms > now_ms:
                    continue
                # Proton's next deadline (a heartbeat to send, the peer's silence to judge)
                # moves earlier only when the peer says something, which resets it: an idle
                # connection is not ticked (nor written) again before it. At 10,000 idle
                # connections, ticking each one every turn took 50 ms of every 500.
                deadline = connection.tick(now_ms)
                connection.next_tick_ms = deadline if deadline > 0 else now_ms + IDLE_RECHECK_MS
                self.adaptor.dirty.add(connection)
            except Exception as error:
                self.faults.connection_failed(connection, "ticking its transport", error)
        self._process_events()
        self._flush_output()

    def request_stop(self) -> None:
        """Safe from a signal handler: the loop notices within one tick."""
        self._stop_requested = True
