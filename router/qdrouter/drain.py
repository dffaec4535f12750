"""A graceful drain on SIGTERM (qdmesh's `--drain-timeout`): the router leaves without
losing what passes through it.

In order: (1) it accepts nothing new (listeners closed, attaches refused, clients' producers
given no more credit); (2) it tells its neighbours it is leaving (an empty link state and no
mobile addresses: they route around it) while its inter-router connections stay up; (3) it
waits for what it holds to settle, forwarding what arrives meanwhile, until the drain timeout;
(4) it gives whatever is still unsettled its outcome, hands its clients back (their
connections closed with amqp:connection:forced) and stops, closing the inter-router
connections last. A second signal stops at once. docs/operations.md, "Draining a router".
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from .amqp.loop.drain import ServerDrain
from .amqp.loop.server import AmqpServer
from .interior import MeshNode

log = logging.getLogger("qdrouter.ROUTER")

POLL_S = 0.2
# How long a router with neighbours keeps forwarding after it withdrew, even with nothing in
# flight: qdrouterd recomputes its paths once a second, and what a neighbour sent before it
# did must still find the inter-router connection open.
REROUTE_WINDOW_S = 2.0
# How long the clients get to answer the close before the inter-router connections go too.
HAND_BACK_WAIT_S = 1.0

IDLE, SETTLING, HANDING_BACK, STOPPING = "idle", "settling", "handing-back", "stopping"


class Connectors(Protocol):
    """The router's connectors, as the drain needs them."""

    def hold_connectors(self) -> int:
        """Stop dialling (connections up stay up); returns how many connectors were held."""


class Drain:
    """Sequences the drain over the router's event loop (polled on its timers)."""

    def __init__(self, router_id: str, server: AmqpServer, mesh: MeshNode | None,
                 connectors: Connectors, timeout_s: float) -> None:
        self.router_id = router_id
        self._connectors = connectors
        self.timeout_s = timeout_s
        self._server = server
        self._mesh = mesh
        self._steps = ServerDrain(server, f"router {router_id} is shutting down")
        self._requested = False
        self.state = IDLE
        self._started = 0.0
        self._deadline = 0.0
        self._quiet_at = 0.0
        self._hand_back_until = 0.0
        self._outcomes_before = 0
        self._in_flight_before = 0
        server.timers.call_later(POLL_S, self._poll)

    @property
    def draining(self) -> bool:
        """Whether the drain has begun (management's router entity shows it)."""
        return self.state != IDLE

    def request(self) -> None:
        """A stop signal. Safe from a signal handler (it only sets flags): the first begins the
        drain, or stops at once with a drain timeout of 0; a second stops at once."""
        if self.timeout_s <= 0 or self._requested:
            self._server.request_stop()
        self._requested = True

    def _poll(self) -> None:
        try:
            self._step(time.monotonic())
        finally:
            if self.state != STOPPING:
                self._server.timers.call_later(POLL_S, self._poll)

    def _step(self, now: float) -> None:
        if self.state == IDLE:
            if self._requested and self.timeout_s > 0:
                self._begin(now)
        elif self.state == SETTLING:
            quiet = self._steps.unsettled() == 0 and now >= self._quiet_at
            if quiet or now >= self._deadline:
                self._hand_back(now)
        elif self.state == HANDING_BACK:
            if not self._steps.client_connections() or now >= self._hand_back_until:
                self.state = STOPPING
                log.info("Draining: closing the inter-router connections; router %s stops", self.router_id)
                self._server.request_stop()

    def _begin(self, now: float) -> None:
        self.state = SETTLING
        self._started = now
        self._deadline = now + self.timeout_s
        self._outcomes_before = self._steps.outcomes()
        self._in_flight_before = self._steps.unsettled()
        producers = self._steps.stop_accepting()
        held = self._connectors.hold_connectors()
        log.info("Draining router %s (drain timeout %gs): no new connections or links (%d "
                 "connector(s) stop dialling); %d client producer link(s) get no more credit; "
                 "%d delivery(ies) in flight",
                 self.router_id, self.timeout_s, held, producers, self._in_flight_before)
        neighbours = self._mesh.withdraw() if self._mesh is not None else 0
        self._quiet_at = now + min(REROUTE_WINDOW_S, self.timeout_s) if neighbours else now
        if self._mesh is not None:
            log.info("Draining: withdrew from the network (empty link state, no mobile addresses) "
                     "and told %d neighbour(s); inter-router connections stay up", neighbours)

    def _hand_back(self, now: float) -> None:
        # The state moves on first: should handing back fail (logged by the timers' fault
        # boundary), the router still stops, never retrying it every poll.
        self.state = HANDING_BACK
        self._hand_back_until = now + HAND_BACK_WAIT_S
        settled = self._steps.outcomes() - self._outcomes_before
        handed = self._steps.hand_back()
        log.info("Draining: %d delivery(ies) settled in %.1fs, %d given up at the drain timeout "
                 "(released or modified to their senders), %d link-routed one(s) still unsettled "
                 "(they end with their links); %d attach(es) refused",
                 settled, now - self._started, handed.given_up, handed.routed, self._steps.refused)
        log.info("Draining: handed back %d link(s) on %d client connection(s) (amqp:connection:forced)",
                 handed.links, handed.connections)
