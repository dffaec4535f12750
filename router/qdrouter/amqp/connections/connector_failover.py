"""The places a connector dials, as qdrouterd keeps them (router_node.c, connection_manager.c):
its own host and port first; once a peer's open names a failover-server-list, the place it
reached and each listed server after it. When a connection is lost the connector dials the
next place, round robin, a second later; without a list it dials its own host and port again
after its back-off."""

from __future__ import annotations

from typing import Any, List, Tuple

from ..bindings.proton_ffi import ffi, lib
from ..codec import MessageFormatError, decode_value

FAILOVER_LIST = "failover-server-list"
# A peer's list is bounded: a hostile peer must not make the connector hold or dial thousands.
MAX_PLACES = 16
# qdrouterd cycles through a failover list every second (server.c).
FAILOVER_RETRY_S = 1.0

Place = Tuple[str, str, int]  # scheme, host, port


class FailoverPlaces:
    def __init__(self, host: str, port: int, scheme: str = "amqp") -> None:
        self.places: List[Place] = [(scheme, host, port)]
        self.index = 0

    @property
    def current(self) -> Place:
        return self.places[self.index]

    @property
    def has_failover(self) -> bool:
        return len(self.places) > 1

    def advance(self) -> None:
        self.index = (self.index + 1) % len(self.places)

    def learn(self, listed: List[Place] | None) -> None:
        """A peer's open named ``listed`` (None: it named no list, which changes nothing; an
        empty list keeps only the connector's own place and the one reached)."""
        if listed is None:
            return
        reached = self.current
        places = [self.places[0]]
        for place in [reached, *listed]:
            if place not in places and len(places) < MAX_PLACES:
                places.append(place)
        self.places = places
        self.index = places.index(reached)

    def describe(self) -> str:
        """The failoverUrls a connector reports, from the place dialled next on, as qdrouterd
        reports them; empty without a list."""
        if not self.has_failover:
            return ""
        order = self.places[self.index:] + self.places[:self.index]
        return ", ".join(f"{scheme}://{host}:{port}" for scheme, host, port in order)


def failover_list(pn_connection: Any) -> List[Place] | None:
    """The failover-server-list of the peer's open, or None if it sent none (or none usable)."""
    data = lib.pn_connection_remote_properties(pn_connection)
    size = lib.pn_data_encoded_size(data)
    if size <= 0:
        return None
    buffer = ffi.new("char[]", size)
    written = lib.pn_data_encode(data, buffer, size)
    if written <= 0:
        return None
    try:
        properties, _ = decode_value(bytes(ffi.buffer(buffer, written)))
    except MessageFormatError:
        return None
    listed = properties.get(FAILOVER_LIST) if isinstance(properties, dict) else None
    if not isinstance(listed, list):
        return None
    places: List[Place] = []
    for item in listed[:MAX_PLACES]:
        if not isinstance(item, dict):
            continue
        host, port, scheme = item.get("network-host"), item.get("port", "5672"), item.get("scheme", "amqp")
        port_text = str(port)
        if isinstance(host, str) and host and port_text.isdigit() and int(port_text) <= 65535:
            places.append((str(scheme), host, int(port_text)))
    return places
