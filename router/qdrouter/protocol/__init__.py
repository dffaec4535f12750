"""The Qpid Dispatch inter-router routing protocol as pure logic (no I/O, no clock, no threads).

See docs/routing-protocol.md.  Entry point: :class:`RoutingEngine`.
"""

from __future__ import annotations

from qdrouter.protocol.engine import (
    HELLO_ADDRESS,
    Delivery,
    Outbound,
    RoutingEngine,
    RoutingEvent,
    router_address,
    router_ma_address,
)
from qdrouter.protocol.messages import PROTOCOL_VERSION, IncompatibleVersion, ProtocolError, decode

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
