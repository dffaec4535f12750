"""The Qpid Dispatch inter-router routing protocol as pure logic (no I/O, no clock, no threads).

See docs/routing-protocol.md.  Entry point: :class:`RoutingEngine`.
"""

from __future__ import annotations

from qdrouter.protocol.engine import RoutingEngine
from qdrouter.protocol.messages import PROTOCOL_VERSION, IncompatibleVersion, ProtocolError, decode
from qdrouter.protocol.outbound import (
    HELLO_ADDRESS,
    Delivery,
    Outbound,
    RoutingEvent,
    router_address,
    router_ma_address,
)

__all__ = [
    "HELLO_ADDRESS",
    "PROTOCOL_VERSION",
    "Delivery",
    "IncompatibleVersion",
    "Outbound",
    "ProtocolError",
    "RoutingEngine",
    "RoutingEvent",
    "decode",
    "router_address",
    "router_ma_address",
]
