"""What the routing engine hands its caller: control messages to send (Outbound), where a
routed control message goes (Delivery), what it learned (RoutingEvent), and the control
addresses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Hashable, Tuple

HELLO_ADDRESS = "_local/qdhello"


def router_address(router_id: str, area: str = "0") -> str:
    """Control address of one router (router_id 'all' = every router)."""
    return f"_topo/{area}/{router_id}/qdrouter"


def router_ma_address(router_id: str, area: str = "0") -> str:
    """Mobile-address-sync address of one router ('all' = every router)."""
    return f"_topo/{area}/{router_id}/qdrouter.ma"


@dataclass(frozen=True)
class Outbound:
    address: str
    body: Dict[str, Any]
    opcode: str
    via: Hashable | None = None  # connection to send on; None = route by address

    @property
    def application_properties(self) -> Dict[str, str]:
        return {"opcode": self.opcode}


@dataclass(frozen=True)
class Delivery:
    local: bool  # hand the message to this router's own on_message
    conns: Tuple[Hashable, ...] = ()  # connections to forward copies on


@dataclass(frozen=True)
class RoutingEvent:
    kind: str  # neighbor_up, neighbor_down, routes, valid_origins, addresses, duplicate_id, error
    data: Any = None
