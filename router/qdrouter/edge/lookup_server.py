"""The address-lookup server of an interior router (qdrouterd's
modules/address_lookup_server/): an edge router asks, before attaching a client's link,
whether its address is link-routed in the network; if it is, the edge passes the attach
up its edge connection instead of serving it itself.

Request: application properties {version: 1, opcode: 1}, body [address, incoming (bool)],
reply-to and correlation-id. Reply: {version: 1, opcode: 1, status: 0 (found) or 3 (not
found)}, body [is link route, has destinations].
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from ..amqp.codec.message import Header, Message, Properties, decode_message, encode_message
from ..amqp.codec.values import UInt
from ..core.links import CoreLink, InFlight
from ..core.outcomes import ACCEPTED, REJECTED
from .terms import LOOKUP_ADDRESS

if TYPE_CHECKING:
    from ..core.forwarder import Forwarder
    from ..core.link_route_table import LinkRoute, LinkRouteTable

log = logging.getLogger("qdrouter.ROUTER_CORE")

PROTOCOL_VERSION = 1
OPCODE_LINK_ROUTE_LOOKUP = 1
STATUS_OK = 0
STATUS_NOT_FOUND = 3


class LookupServer:
    def __init__(self, forwarder: Forwarder, link_routes: LinkRouteTable,
                 has_destination: Callable[[LinkRoute, bool], bool]) -> None:
        self.forwarder = forwarder
        self.link_routes = link_routes
        self.has_destination = has_destination
        self.origin = CoreLink(0, "address-lookup", True, None, None, None)
        forwarder.table.subscribe(LOOKUP_ADDRESS, self.handle)

    def handle(self, message: InFlight) -> int:
        try:
            request = decode_message(message.raw)
            props = request.application_properties or {}
            body = request.body
            if props.get("version") != PROTOCOL_VERSION or props.get("opcode") != OPCODE_LINK_ROUTE_LOOKUP \
                    or not isinstance(body, list) or len(body) < 2 or not isinstance(body[0], str) \
                    or request.properties is None or not request.reply_to:
                log.info("Rejected an invalid address lookup request")
                return REJECTED
        except Exception as error:  # malformed input: rejected, never a crash
            log.info("Rejected an undecodable address lookup request: %s", error)
            return REJECTED
        address = body[0][6:] if body[0].startswith("amqp:/") else body[0]
        incoming = bool(body[1])
        route = self.link_routes.find(address, incoming)
        remote = self.link_routes.find_remote(address, incoming)
        is_route = route is not None or bool(remote)
        has_dest = bool(remote) or (route is not None and self.has_destination(route, incoming))
        reply = encode_message(Message(
            header=Header(durable=False),
            properties=Properties(to=request.reply_to, correlation_id=request.properties.correlation_id),
            application_properties={"version": UInt(PROTOCOL_VERSION),
                                    "opcode": UInt(OPCODE_LINK_ROUTE_LOOKUP),
                                    "status": UInt(STATUS_OK if is_route else STATUS_NOT_FOUND)},
            body=[is_route, has_dest]))
        reply_to = request.reply_to[6:] if request.reply_to.startswith("amqp:/") else request.reply_to
        if not self.forwarder.inject(reply, reply_to, self.origin):
            log.info("No route to the reply-to %r of an address lookup", reply_to)
        return ACCEPTED
