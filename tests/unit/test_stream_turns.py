"""Copies waiting for a link that carries a streamed message (amqp/data_path/stream_turns.py): they
go in order once its stream ends, and past the bound they are dropped and counted, never
kept. Over real sockets: tests/hostile/test_large_multicast.py."""

from __future__ import annotations

from typing import List, Tuple

from qdrouter.amqp.data_path.stream_turns import WAIT_BYTES, LinkTurns
from qdrouter.core.links import CoreLink, InFlight


def _setup() -> Tuple[LinkTurns, CoreLink, CoreLink, List[Tuple[str, bytes]]]:
    sent: List[Tuple[str, bytes]] = []
    turns = LinkTurns(lambda link, message, presettled: sent.append((link.name, message.raw)))
    to_router = CoreLink(7, "to-R2", False, None, None, object())
    producer = CoreLink(1, "producer", True, None, None, object())
    return turns, to_router, producer, sent


def test_waiting_copies_go_in_order_once_the_stream_ends() -> None:
    turns, link, producer, sent = _setup()
    for index in range(3):
        raw = bytes([index]) * 100
        turns.wait(link, InFlight(raw, raw, producer, None, True))
    assert sent == [], "a copy went while the link still carried its stream"
    turns.go(link)
    assert sent == [("to-R2", bytes([i]) * 100) for i in range(3)]
    turns.go(link)  # nothing waits any more: nothing is sent twice
    assert len(sent) == 3


def test_copies_past_the_bound_are_dropped_and_counted() -> None:
    turns, link, producer, sent = _setup()
    raw = b"x" * (WAIT_BYTES // 4)
    for _ in range(6):
        turns.wait(link, InFlight(raw, raw, producer, None, True))
    assert link.counters.dropped_presettled == 2, "the copies past the bound were not counted"
    turns.go(link)
    assert len(sent) == 4
    link.capacity = 2
    small = b"y"
    for _ in range(3):
        turns.wait(link, InFlight(small, small, producer, None, True))
    assert link.counters.dropped_presettled == 3, "a link's capacity bounds its waiting copies too"


def test_an_unsettled_message_is_never_dropped() -> None:
    """Its producer's credit bounds it, and it must reach its consumer or get an outcome."""
    turns, link, producer, sent = _setup()
    link.capacity = 1
    for index in range(3):
        raw = bytes([index])
        turns.wait(link, InFlight(raw, raw, producer, None, False), presettled=False)
    assert link.counters.dropped_presettled == 0
    turns.go(link)
    assert [raw for _, raw in sent] == [b"\x00", b"\x01", b"\x02"]
