"""An edge router's connection to the interior (qdrouterd: modules/edge_router/
connection_manager.c and the fixed links of addr_proxy.c).

Every edge connector keeps its connection up (with the usual back-off); one of them at a
time is active: the first to open. When it drops, another open one takes over at once, as
in qdrouterd, or the next to open. On the active connection the edge attaches:
- the uplink, an anonymous sending link: what no address here takes goes up it;
- the downlink, a receiving link with source its own id and the capability
  qd.router-edge-downlink: what the network sends to ``_edge/<id>/...``;
- the tracking link, receiving from ``_$qd.edge_addr_tracking`` (address_proxy.py reads it);
then the address proxy's links (address_proxy.py).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, List

from ..amqp.bindings.proton_ffi import lib
from ..amqp.connections.connection_retire import credit_out, retire
from ..core.address_table import Address
from ..core.links import CoreLink, InFlight
from .address_proxy import AddressProxy
from .attach import open_link
from .lookup_client import LookupClient
from .seams import PnObject
from .terms import DOWNLINK_CAPABILITY, EDGE_PREFIX, TRACKING_ADDRESS, UPLINK_KEY

if TYPE_CHECKING:
    from ..amqp.connections.connection import AmqpConnection
    from ..amqp.links.endpoints import EndpointHandler
    from ..amqp.wakeups.timers import Timers
    from ..core.forwarder import Forwarder

log = logging.getLogger("qdrouter.ROUTER_CORE")

TRACKING_KEY = "_local/_edge_tracking"
# A replaced uplink: how long the address proxy waits for the old connection's credit back
# (hand_over), and how often it looks.
PROXY_WAIT_S = 5.0
PROXY_POLL_S = 0.02


class EdgeUplink:
    def __init__(self, router_id: str, endpoints: EndpointHandler, forwarder: Forwarder,
                 timers: Timers) -> None:
        self.router_id = router_id
        self.endpoints = endpoints
        self.forwarder = forwarder
        self.active: AmqpConnection | None = None
        # Edge connections open now, oldest first: the fallbacks.
        self.open: List[AmqpConnection] = []
        self.uplink: CoreLink | None = None
        self.timers = timers
        self.proxy = AddressProxy(endpoints, forwarder)
        self.lookup = LookupClient(endpoints, forwarder, timers)
        self.uplink_address = forwarder.table.get(UPLINK_KEY)
        forwarder.resolve_with(self)
        forwarder.add_address_listener(self.proxy)
        forwarder.table.subscribe(TRACKING_KEY, self.proxy.tracking_update)

    # ---- connections ---------------------------------------------------------------------
    def connection_opened(self, connection: AmqpConnection) -> None:
        if connection not in self.open:
            self.open.append(connection)
        if self.active is None:
            self._activate(connection)

    def connection_lost(self, connection: AmqpConnection) -> None:
        if connection in self.open:
            self.open.remove(connection)
        if connection is not self.active:
            return
        self.active = None
        self.uplink = None
        self.proxy.deactivate()
        self.lookup.deactivate()
        alternate = next((c for c in self.open if not c.closed), None)
        if alternate is not None:
            log.info("Edge connection (id=%d) to interior lost, activating alternate id=%d",
                     connection.identity, alternate.identity)
            self._activate(alternate)
        else:
            log.info("Edge connection (id=%d) to interior lost, no alternate connection available",
                     connection.identity)

    def hand_over(self, old: AmqpConnection, new: AmqpConnection) -> None:
        """qdmesh: ``new`` (open, made with newer TLS material) replaces ``old``
        make-before-break (amqp/connections/tls_rotation.py): the links of the active connection are
        attached on the new one (the address proxy's once the old ones' credit is back); the
        old one's stay for what is in flight but carry nothing new
        (amqp/connections/connection_retire.py). The caller closes ``old`` once nothing on it is
        unsettled."""
        if new not in self.open:
            self.open.append(new)
        if old in self.open:
            self.open.remove(old)
        retire(old, self.endpoints.adaptor.dirty)
        if self.active is not old:
            return  # a fallback: nothing was routed over it
        self.active = None
        self.uplink = None
        self.proxy.deactivate()
        self.lookup.deactivate()
        log.info("Edge connection (id=%d) to interior replaced by id=%d", old.identity, new.identity)
        session = self._activate(new, proxy=False)
        self._proxy_after_drain(old, new, session, time.monotonic())

    def _proxy_after_drain(self, old: AmqpConnection, new: AmqpConnection, session: PnObject,
                           started: float) -> None:
        """The address proxy's links go to ``new`` once the interior has given back the credit
        of ``old``'s receiving links: until then it may still send on them, and a multicast
        message would reach this router twice, once on each connection's proxy link."""
        if self.active is not new:
            return  # lost meanwhile: the next active connection has the proxy
        waited = time.monotonic() - started
        if old.closed or credit_out(old) == 0 or waited > PROXY_WAIT_S:
            if waited > PROXY_WAIT_S:
                log.warning("Edge connection (id=%d): the interior kept its credit on id=%d for %g s; "
                            "address proxy links attached all the same", new.identity, old.identity,
                            PROXY_WAIT_S)
            self.proxy.activate(new, session)
            return
        self.timers.call_later(PROXY_POLL_S, lambda: self._proxy_after_drain(old, new, session, started))

    def _activate(self, connection: AmqpConnection, proxy: bool = True) -> PnObject:
        log.info("Edge connection (id=%d) to interior established", connection.identity)
        self.active = connection
        endpoints = self.endpoints
        session = lib.pn_session(connection.pn_connection)
        connection.session_settings(session)
        lib.pn_session_open(session)
        uplink = open_link(endpoints, connection, session, f"qdlink.edge.uplink.{connection.identity}",
                           False, None, None, UPLINK_KEY)
        self.uplink = uplink
        self.forwarder.consumer_attached(uplink)
        downlink = open_link(endpoints, connection, session, f"qdlink.edge.downlink.{connection.identity}",
                             True, self.router_id, None, None, (DOWNLINK_CAPABILITY,))
        self.forwarder.producer_attached(downlink)
        tracking = open_link(endpoints, connection, session, f"qdlink.edge.tracking.{connection.identity}",
                             True, TRACKING_ADDRESS, None, TRACKING_KEY)
        self.forwarder.producer_attached(tracking)
        self.lookup.activate(connection, session)
        if proxy:
            self.proxy.activate(connection, session)
        return session

    # ---- routing ---------------------------------------------------------------------------
    def unknown_address(self, key: str | None, message: InFlight) -> Address | None:
        """No address here takes it: up to the interior, unless it came from there (or is
        for this router itself)."""
        if self.uplink is None or message.in_link.via_edge or not key:
            return None
        if key.startswith(f"{EDGE_PREFIX}{self.router_id}/"):
            return None
        return self.uplink_address

    def alias(self, key: str) -> Address | None:
        """Other routers' topological addresses (``_topo/...``, another edge's
        ``_edge/<id>/...``) are the uplink's, as qdrouterd's edge hashes them."""
        if self.uplink is None:
            return None
        if key.startswith("_topo/") or (key.startswith(EDGE_PREFIX)
                                        and not key.startswith(f"{EDGE_PREFIX}{self.router_id}/")):
            return self.uplink_address
        return None
