"""The core's send/credit API (core/sends.py): the fast paths' one-call forms (passed_on,
copies_passed_on) leave links, counters and credit exactly as the forwarder's own steps do
(count_send, then Forwarder._deliver's credit rule through release_credit), for every kind
of link on either side, settled or not."""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Tuple

import pytest

from qdrouter.core.address_table import Address, AddressTable
from qdrouter.core.forwarder import Forwarder
from qdrouter.core.links import DATA, ENDPOINT, CoreLink, InFlight
from qdrouter.core.sends import count_send


class NoIO:
    def transmit(self, link: CoreLink, message: InFlight, presettled: bool) -> None:
        raise AssertionError("the fast paths queue their own sends")

    def finish_incoming(self, message: InFlight, outcome: int) -> None:
        raise AssertionError("nothing is finished here")

    def read_whole(self, message: InFlight, on_whole: Any) -> None:
        raise AssertionError("nothing is read here")


def _setup(out_kind: str, producer_kind: str, via_edge: bool,
           consumers: int = 1) -> Tuple[Forwarder, Address, List[CoreLink], CoreLink]:
    forwarder = Forwarder(AddressTable((("closest", "closest"), ("multicast", "multicast"))), NoIO())
    key = "multicast/a" if consumers > 1 else "closest/a"
    outs = []
    for index in range(consumers):
        out = CoreLink(10 + index, f"out{index}", False, key, object(), object())
        forwarder.consumer_attached(out)
        out.kind = out_kind
        out.credit = 5
        outs.append(out)
    producer = CoreLink(1, "producer", True, key, object(), object())
    producer.kind = producer_kind
    producer.via_edge = via_edge
    producer.capacity = 10
    forwarder.producer_attached(producer)
    forwarder.take_credit()  # the window the producer was given on attach
    producer.owed_credit = 0
    assert producer.address is not None
    return forwarder, producer.address, outs, producer


def _state(forwarder: Forwarder, address: Address, outs: List[CoreLink], producer: CoreLink,
           message: InFlight | None) -> Dict[str, Any]:
    return {
        "outs": [(o.credit, o.outstanding, o.counters.delivered, o.counters.presettled) for o in outs],
        "address": (address.counters.deliveries_egress, address.counters.deliveries_transit),
        "producer": (producer.credit, producer.owed_credit, producer.credit_queued),
        "dirty": [link.name for link in forwarder.credit_dirty],
        "held": message.credit_held if message is not None else None,
    }


@pytest.mark.parametrize("out_kind,producer_kind,via_edge,presettled", list(itertools.product(
    (ENDPOINT, DATA), (ENDPOINT, DATA), (False, True), (False, True))))
def test_passed_on_is_count_send_then_the_forwarders_credit_rule(
        out_kind: str, producer_kind: str, via_edge: bool, presettled: bool) -> None:
    fast, fast_address, [fast_out], fast_producer = _setup(out_kind, producer_kind, via_edge)
    fast_message = None if presettled else InFlight(b"m", b"m", fast_producer, object(), False)
    came_back = fast.passed_on(fast_out, fast_producer, fast_message, fast_address)

    ref, ref_address, [ref_out], ref_producer = _setup(out_kind, producer_kind, via_edge)
    ref_message = InFlight(b"m", b"m", ref_producer, None if presettled else object(), presettled)
    ref_producer.credit -= 1  # as Forwarder._forward takes one
    count_send(ref_out, presettled, ref_address)
    if presettled or producer_kind != ENDPOINT or via_edge:  # Forwarder._deliver's rule
        ref.release_credit(ref_producer)
    else:
        ref_message.credit_held = True

    assert _state(fast, fast_address, [fast_out], fast_producer, fast_message) == \
        _state(ref, ref_address, [ref_out], ref_producer, None if presettled else ref_message)
    assert came_back == (fast_producer.owed_credit == 1)


@pytest.mark.parametrize("consumers", [2, 4])
def test_copies_passed_on_is_count_send_per_copy_then_the_producers_credit(consumers: int) -> None:
    fast, fast_address, fast_outs, fast_producer = _setup(ENDPOINT, ENDPOINT, False, consumers)
    fast.copies_passed_on(fast_outs, fast_producer, fast_address)

    ref, ref_address, ref_outs, ref_producer = _setup(ENDPOINT, ENDPOINT, False, consumers)
    ref_producer.credit -= 1
    for out in ref_outs:
        count_send(out, True, ref_address)
    ref.release_credit(ref_producer)

    assert _state(fast, fast_address, fast_outs, fast_producer, None) == \
        _state(ref, ref_address, ref_outs, ref_producer, None)
    assert fast_producer.owed_credit == 1
