"""The neighbour probe: every interval, a GET-MGMT-NODES request to each neighbour's
`_topo/0/<neighbour>/$management` (qdrouterd answers it as qdmesh does), with its reply-to this
router's in-process `_topo/0/<self>/$qdmesh.canary`; the time to the answer is the round trip
across the inter-router connection and the neighbour's management agent.

The request travels as any management request from another router would: pre-settled,
through the forwarder (``Forwarder.inject``), answered on the address's in-process handler."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Dict, List, Protocol

from ..amqp.codec import Header, Message, MessageFormatError, Properties, decode_message, encode_message
from ..core.address_table import CLOSEST
from ..core.links import CoreLink, InFlight
from ..core.outcomes import ACCEPTED, REJECTED
from .book import PeerStats, ProbeBook

if TYPE_CHECKING:
    from ..amqp.wakeups.timers import Timers
    from ..core.forwarder import Forwarder

log = logging.getLogger("qdrouter.ROUTER")

REPLY_NODE = "$qdmesh.canary"


class Neighbours(Protocol):
    """Who this router has a direct inter-router connection to (interior/mesh_node.py)."""

    def neighbour_ids(self) -> List[str]: ...


class NeighbourProbe:
    def __init__(self, router_id: str, interval_s: float, neighbours: Neighbours, forwarder: Forwarder,
                 timers: Timers) -> None:
        self.interval_s = interval_s
        self.neighbours = neighbours
        self.forwarder = forwarder
        self.timers = timers
        # An answer that takes longer than the interval (or 5 s) is a failure.
        self.book = ProbeBook(interval_s)
        self.reply_to = f"_topo/0/{router_id}/{REPLY_NODE}"
        address = forwarder.table.subscribe(self.reply_to, self.on_reply)
        address.distribution = CLOSEST
        self.origin = CoreLink(0, REPLY_NODE, True, None, None, None)
        timers.call_later(interval_s, self._round)

    # ---- probing -----------------------------------------------------------------------
    def _round(self) -> None:
        try:
            now = time.monotonic()
            for peer, correlation in self.book.round(self.neighbours.neighbour_ids(), now):
                self._send(peer, correlation)
            if self.book.timeout_s < self.interval_s:
                self.timers.call_later(self.book.timeout_s, lambda: self.book.expire(time.monotonic()))
        finally:
            self.timers.call_later(self.interval_s, self._round)

    def _send(self, peer: str, correlation: str) -> None:
        target = f"_topo/0/{peer}/$management"
        payload = encode_message(Message(
            header=Header(durable=False),
            properties=Properties(to=target, reply_to=self.reply_to, correlation_id=correlation),
            application_properties={"operation": "GET-MGMT-NODES", "type": "org.amqp.management",
                                    "name": "self"},
            body=None))
        if not self.forwarder.inject(payload, target, self.origin):
            log.debug("Round-trip probe to %s not sent: no route to it yet", peer)
            self.book.not_sent(peer)

    def on_reply(self, message: InFlight) -> int:
        """An answer from a neighbour's management (any status: it answered)."""
        now = time.monotonic()
        try:
            decoded = decode_message(message.raw, with_body=False)
        except MessageFormatError as error:
            log.info("Undecodable answer to a round-trip probe: %s", error)
            return REJECTED
        correlation = decoded.properties.correlation_id if decoded.properties is not None else None
        if isinstance(correlation, str):
            self.book.answered(correlation, now)
        return ACCEPTED

    # ---- what it measured --------------------------------------------------------------
    def peer_stats(self) -> Dict[str, PeerStats]:
        """Each current neighbour's measurements (read only)."""
        return dict(self.book.peers)

    def add_to_node_rows(self, rows: List[Dict[str, Any]]) -> None:
        """roundTripSeconds, roundTripAverageSeconds and probeFailures on the router.node rows
        of current neighbours."""
        for row in rows:
            stats = self.book.peers.get(str(row.get("id")))
            if stats is None:
                continue
            row["roundTripSeconds"] = _rounded(stats.last)
            row["roundTripAverageSeconds"] = _rounded(stats.average)
            row["probeFailures"] = stats.failures


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 6)
