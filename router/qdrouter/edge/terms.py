"""What edge and interior routers say to each other: capabilities, addresses, bodies."""

from __future__ import annotations

from typing import Any, List, Tuple

from ..amqp.codec.message import Header, Message, decode_message, encode_message
from ..core.address_table import phased, split_phase

EDGE = "edge"  # listener / connector role, and the connection row's role
DOWNLINK_CAPABILITY = "qd.router-edge-downlink"
TRACKING_ADDRESS = "_$qd.edge_addr_tracking"
LOOKUP_ADDRESS = "_$qd.addr_lookup"
EDGE_PREFIX = "_edge/"
WAYPOINT_CAPABILITY = "qd.waypoint"  # + ".<ordinal>"
# The address an edge router's uplink consumes (qdrouterd's local address "_edge").
UPLINK_KEY = "_local/_edge"


def summary_key(address: str | None) -> str | None:
    """``_edge/<edge id>/...`` -> the interior's key for that edge, ``_edge/<edge id>``
    (qdrouterd's edge-summary class, "H<edge id>" in its address hash), else None."""
    if not address or not address.startswith(EDGE_PREFIX):
        return None
    edge_id = address[len(EDGE_PREFIX):].partition("/")[0]
    return EDGE_PREFIX + edge_id if edge_id else None


def edge_of(key: str) -> str | None:
    """The edge id of an edge-summary key."""
    if key.startswith(EDGE_PREFIX) and "/" not in key[len(EDGE_PREFIX):]:
        return key[len(EDGE_PREFIX):]
    return None


def hash_key(core_key: str) -> str:
    """The core's key of a mobile address -> qdrouterd's hash key ("M0addr", "M1addr")."""
    address, phase = split_phase(core_key)
    return f"M{phase}{address}"


def core_key(hash_key_: str) -> str | None:
    """qdrouterd's mobile hash key -> the core's key (None for other classes)."""
    if len(hash_key_) >= 2 and hash_key_[0] == "M" and hash_key_[1].isdigit():
        return phased(hash_key_[2:], int(hash_key_[1]))
    return None


def tracking_message(core_key_: str, has_destination: bool) -> bytes:
    """An address-tracking update, as qdrouterd's edge_addr_tracking.c composes it."""
    return encode_message(Message(header=Header(durable=False),
                                  body=[hash_key(core_key_), has_destination]))


def read_tracking(raw: bytes) -> Tuple[str, bool] | None:
    """[hash key, bool] from an update, or None if it is not one (rejected)."""
    body: Any = decode_message(raw).body
    if isinstance(body, list) and len(body) == 2 and isinstance(body[0], str) \
            and isinstance(body[1], bool):
        return body[0], body[1]
    return None


def waypoint_capability(phase: int, outgoing: bool, in_phase: int, out_phase: int) -> str | None:
    """The capability an edge's proxy link for address phase ``phase`` carries, as
    qdrouterd's addr_proxy.c set_waypoint_capability (``outgoing``: the edge sends). None
    where the link is a plain client link (or the phase is out of the configured range)."""
    if (outgoing and phase == in_phase) or (not outgoing and phase == out_phase):
        return None
    if phase < in_phase or phase > out_phase:
        return None
    return f"{WAYPOINT_CAPABILITY}.{phase + (0 if outgoing else 1)}"


def waypoint_ordinal(capabilities_: List[str]) -> int:
    """N of a qd.waypoint.N capability (0: none): producers use phase N, consumers N - 1."""
    for capability in capabilities_:
        if capability.startswith(WAYPOINT_CAPABILITY + "."):
            tail = capability[len(WAYPOINT_CAPABILITY) + 1:]
            if tail.isdigit() and 0 < int(tail) < 10:
                return int(tail)
    return 0
