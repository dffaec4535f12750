"""An edge router's address-lookup client (qdrouterd's modules/address_lookup_client/):
a client's attach to an address that no link route of the edge itself matches waits while
the interior router is asked whether the network link-routes the address; if it does, the
attach is passed up the edge connection (the interior routes it on), else the edge serves
it as usual. No answer within 3 s, or no edge connection, and the edge serves it itself.

Requests go on a sending link to ``_$qd.addr_lookup``; replies come back on a receiving
link with a dynamic source (the interior names it), matched by correlation id.
"""

from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING, Dict, Set, Tuple

from ..amqp.bindings.proton_ffi import c_string, lib, terminus_address
from ..amqp.bindings.proton_shim import pointer_key
from ..amqp.codec.message import Header, Message, Properties, decode_message, encode_message
from ..amqp.codec.values import UInt
from ..amqp.links.capabilities import dynamic_node_address
from ..core.links import CoreLink, InFlight
from ..core.outcomes import ACCEPTED
from .attach import open_link
from .lookup_server import OPCODE_LINK_ROUTE_LOOKUP, PROTOCOL_VERSION, STATUS_OK
from .seams import PnObject
from .terms import LOOKUP_ADDRESS

if TYPE_CHECKING:
    from ..amqp.connections.connection import AmqpConnection
    from ..amqp.links.endpoints import EndpointHandler
    from ..amqp.wakeups.timers import Timer, Timers
    from ..core.forwarder import Forwarder

log = logging.getLogger("qdrouter.ROUTER_CORE")

TIMEOUT_S = 3.0  # as qdrouterd's client
REPLIES_KEY = "_local/_edge_lookup_replies"


class LookupClient:
    def __init__(self, endpoints: EndpointHandler, forwarder: Forwarder, timers: Timers) -> None:
        self.endpoints = endpoints
        self.forwarder = forwarder
        self.timers = timers
        self.edge_connection: AmqpConnection | None = None
        self.requests: CoreLink | None = None
        self.replies: CoreLink | None = None
        self.reply_to: str | None = None
        # correlation id -> (client connection, its held attach, timer)
        self.pending: Dict[str, Tuple[AmqpConnection, PnObject, Timer]] = {}
        self._ids = itertools.count(1)
        self.origin = CoreLink(0, "address-lookup-client", True, None, None, None)
        self.forwarder.table.subscribe(REPLIES_KEY, self.on_reply)
        # Held attaches the edge serves itself, going through endpoints.link_opened again:
        # past the lookup this time (edge/role.py's _HeldAttaches).
        self.resuming: Set[PnObject] = set()

    # ---- the edge connection ---------------------------------------------------------------
    def activate(self, connection: AmqpConnection, session: PnObject) -> None:
        self.edge_connection = connection
        self.reply_to = None
        self.requests = open_link(self.endpoints, connection, session, "qdlink.edge.lookup.out",
                                  False, None, LOOKUP_ADDRESS, None)
        replies = open_link(self.endpoints, connection, session, "qdlink.edge.lookup.in",
                            True, None, None, REPLIES_KEY)
        lib.pn_terminus_set_dynamic(lib.pn_link_source(replies.handle), True)
        self.replies = replies
        self.forwarder.producer_attached(replies)
        self.endpoints.link_watchers[replies.handle] = self._replies_attached

    def _replies_attached(self, up: bool, error: str | None) -> None:
        replies = self.replies
        if up and replies is not None and replies.handle is not None:
            # As the interior named it ("amqp:/_topo/0/<id>/temp.*" from qdrouterd, which finds
            # its own addresses by that form)
            self.reply_to = c_string(lib.pn_terminus_get_address(lib.pn_link_remote_source(replies.handle)))

    def deactivate(self) -> None:
        """The edge connection went: every held attach is served here."""
        self.edge_connection = self.requests = self.replies = None
        self.reply_to = None
        for correlation in list(self.pending):
            self._serve_locally(correlation)

    def connection_lost(self, connection: AmqpConnection) -> None:
        for correlation, (client, _, timer) in list(self.pending.items()):
            if client is connection:
                timer.cancel()
                del self.pending[correlation]

    def forget(self, pn_link: PnObject) -> None:
        for correlation, (_, held, timer) in list(self.pending.items()):
            if held == pn_link:
                timer.cancel()
                del self.pending[correlation]

    # ---- holding attaches ----------------------------------------------------------------
    def hold(self, connection: AmqpConnection, pn_link: PnObject) -> bool:
        requests = self.requests
        if requests is None or self.reply_to is None or requests.credit <= 0:
            return False
        incoming = bool(lib.pn_link_is_receiver(pn_link))
        terminus = lib.pn_link_remote_target(pn_link) if incoming else lib.pn_link_remote_source(pn_link)
        address = terminus_address(terminus) or (None if incoming else dynamic_node_address(terminus))
        if not address:
            return False
        link_router = self.endpoints.link_router
        if link_router is not None and link_router.table.find(address, incoming) is not None:
            return False  # a link route of this edge's own: served here
        correlation = f"lookup-{next(self._ids)}"
        payload = encode_message(Message(
            header=Header(durable=False),
            properties=Properties(reply_to=self.reply_to, correlation_id=correlation),
            application_properties={"version": UInt(PROTOCOL_VERSION),
                                    "opcode": UInt(OPCODE_LINK_ROUTE_LOOKUP)},
            body=[address, incoming]))
        timer = self.timers.call_later(TIMEOUT_S, lambda: self._serve_locally(correlation))
        self.pending[correlation] = (connection, pn_link, timer)
        self.forwarder.send(requests, InFlight(payload, payload, self.origin, None, True), True)
        log.debug("Address lookup %s for %s (%s)", correlation, address, c_string(lib.pn_link_name(pn_link)))
        return True

    def on_reply(self, message: InFlight) -> int:
        try:
            reply = decode_message(message.raw)
            correlation = reply.properties.correlation_id if reply.properties is not None else None
            status = (reply.application_properties or {}).get("status")
            body = reply.body
            routed = (status == STATUS_OK and isinstance(body, list) and len(body) >= 1
                      and body[0] is True)
        except Exception as error:  # a malformed reply: the attach is served here
            log.info("Undecodable address lookup reply: %s", error)
            return ACCEPTED
        entry = self.pending.pop(str(correlation), None) if correlation is not None else None
        if entry is None:
            return ACCEPTED
        client, pn_link, timer = entry
        timer.cancel()
        link_router = self.endpoints.link_router
        if routed and link_router is not None and self.edge_connection is not None and not client.closed:
            link_router.route_via(client, pn_link, self.edge_connection)
            link_router.on_flow(pn_link)  # credit the client gave while it waited
            self.endpoints.adaptor.dirty.add(client)
        elif not client.closed:
            self.resume(pn_link)
        return ACCEPTED

    def resume(self, pn_link: PnObject) -> None:
        """Serve a held attach here, as if it had just arrived."""
        self.resuming.add(pn_link)
        try:
            self.endpoints.link_opened(pn_link)
        finally:
            self.resuming.discard(pn_link)
        link = self.endpoints.adaptor.links.get(pointer_key(pn_link))
        if link is not None and not link.incoming:
            self.endpoints.adaptor.on_flow(link)  # the credit its client gave while it waited

    def _serve_locally(self, correlation: str) -> None:
        entry = self.pending.pop(correlation, None)
        if entry is not None and not entry[0].closed:
            entry[2].cancel()
            self.resume(entry[1])
