"""The neighbour probe's messages (qdrouter/canary/probe.py), with the router's own codec and
address table and a recording forwarder: what it sends each neighbour, how an answer reaches
it, and what it does with a request that cannot leave or an answer it cannot read."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

from qdrouter.amqp.codec import Message, Properties, decode_message, encode_message
from qdrouter.canary import NeighbourProbe
from qdrouter.core.address_table import AddressTable
from qdrouter.core.links import CoreLink, InFlight
from qdrouter.core.outcomes import ACCEPTED, REJECTED


class Timers:
    def __init__(self) -> None:
        self.calls: List[Tuple[float, Callable[[], None]]] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        self.calls.append((delay, callback))

    def run_next(self) -> None:
        _, callback = self.calls.pop(0)
        callback()


class Forwarder:
    def __init__(self, routable: bool = True) -> None:
        self.table = AddressTable()
        self.sent: List[Tuple[str, Message]] = []
        self.routable = routable

    def inject(self, payload: bytes, key: str, origin: CoreLink) -> bool:
        self.sent.append((key, decode_message(payload)))
        return self.routable


class Neighbours:
    def __init__(self, *ids: str) -> None:
        self.ids = list(ids)

    def neighbour_ids(self) -> List[str]:
        return list(self.ids)


def answer(probe: NeighbourProbe, request: Message, *, raw: bytes | None = None) -> int:
    """Deliver an answer to ``request`` the way the forwarder hands it to an in-process node."""
    assert request.properties is not None
    payload = raw if raw is not None else encode_message(Message(
        properties=Properties(to=request.properties.reply_to,
                              correlation_id=request.properties.correlation_id),
        application_properties={"statusCode": 200}, body=["amqp:/_topo/0/B/$management"]))
    handler: Any = probe.forwarder.table.find(probe.reply_to).handler  # type: ignore[union-attr]
    return int(handler(InFlight(payload, payload, CoreLink(0, "in", True, None, None, None), None, True)))


def test_each_neighbour_is_asked_for_its_management_nodes_and_the_answer_timed() -> None:
    timers, forwarder = Timers(), Forwarder()
    probe = NeighbourProbe("A", 2, Neighbours("B", "C"), forwarder, timers)  # type: ignore[arg-type]
    assert timers.calls[0][0] == 2
    timers.run_next()
    assert [key for key, _ in forwarder.sent] == ["_topo/0/B/$management", "_topo/0/C/$management"]
    key, request = forwarder.sent[0]
    assert request.application_properties == {"operation": "GET-MGMT-NODES", "type": "org.amqp.management",
                                               "name": "self"}
    assert request.properties is not None and request.properties.to == key
    assert request.properties.reply_to == "_topo/0/A/$qdmesh.canary"
    assert answer(probe, request) == ACCEPTED
    rows = [{"id": "A"}, {"id": "B"}, {"id": "C"}, {"id": "D"}]
    probe.add_to_node_rows(rows)
    assert rows[1]["roundTripSeconds"] is not None and rows[1]["roundTripSeconds"] >= 0
    assert rows[1]["probeFailures"] == 0
    # C has not answered yet: no round trip, no failure yet; A itself and D (no neighbour): nothing.
    assert rows[2] == {"id": "C", "roundTripSeconds": None, "roundTripAverageSeconds": None,
                       "probeFailures": 0}
    assert rows[0] == {"id": "A"} and rows[3] == {"id": "D"}
    # Only the next round, an interval later: it times out what is unanswered by then.
    assert [delay for delay, _ in timers.calls] == [2]


def test_a_neighbour_with_no_route_yet_fails_at_once_and_is_asked_again_next_round() -> None:
    timers, forwarder = Timers(), Forwarder(routable=False)
    probe = NeighbourProbe("A", 1, Neighbours("B"), forwarder, timers)  # type: ignore[arg-type]
    timers.run_next()
    timers.run_next()
    assert len(forwarder.sent) == 2
    assert probe.peer_stats()["B"].failures == 2


def test_long_intervals_time_out_after_five_seconds() -> None:
    timers, forwarder = Timers(), Forwarder()
    probe = NeighbourProbe("A", 30, Neighbours("B"), forwarder, timers)  # type: ignore[arg-type]
    timers.run_next()
    assert sorted(delay for delay, _ in timers.calls) == [5.0, 30]
    assert probe.book.outstanding() == 1


def test_answers_it_cannot_read_or_did_not_ask_for_change_nothing() -> None:
    timers, forwarder = Timers(), Forwarder()
    probe = NeighbourProbe("A", 1, Neighbours("B"), forwarder, timers)  # type: ignore[arg-type]
    timers.run_next()
    _, request = forwarder.sent[0]
    assert answer(probe, request, raw=b"\x00garbage") == REJECTED
    forged = Message(properties=Properties(to=probe.reply_to, correlation_id="qdmesh.canary-1"))
    assert answer(probe, forged) == ACCEPTED
    assert probe.peer_stats()["B"].count == 0 and probe.book.outstanding() == 1
