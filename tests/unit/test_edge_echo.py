"""The core's edge echo rule (qdrouterd's qdr_forward_edge_echo_CT): a message that came in
over an edge connection never goes back out on that connection, whatever the distribution."""

from __future__ import annotations

from typing import Any

from qdrouter.core.links import CoreLink, InFlight
from qdrouter.core.outcomes import ACCEPTED, RELEASED
from tests.unit.test_forwarder import make


def _link(forwarder: Any, name: str, incoming: bool, address: str, connection: Any,
          via_edge: bool = False, credit: int = 10) -> CoreLink:
    link = CoreLink(hash(name), name, incoming, address, connection, object())
    link.via_edge = via_edge
    if incoming:
        link.capacity = 10
        forwarder.producer_attached(link)
    else:
        forwarder.consumer_attached(link)
        forwarder.consumer_credit(link, credit)
    return link


def _send(forwarder: Any, link: CoreLink, body: bytes) -> InFlight:
    message = InFlight(body, body, link, object(), False)
    forwarder.forward(message, forwarder.table.find(link.address_key))
    return message


def test_anycast_never_returns_to_its_edge():
    forwarder, io = make()
    edge = object()
    _link(forwarder, "edge-in", False, "closest/x", edge, via_edge=True)
    _link(forwarder, "local", False, "closest/x", object())
    from_edge = _link(forwarder, "edge-out", True, "closest/x", edge, via_edge=True)
    for i in range(6):
        _send(forwarder, from_edge, b"m%d" % i)
    assert {name for name, _, _ in io.sent} == {"local"}


def test_only_consumer_on_its_own_edge_is_no_route():
    forwarder, io = make()
    edge = object()
    _link(forwarder, "edge-in", False, "balanced/y", edge, via_edge=True)
    from_edge = _link(forwarder, "edge-out", True, "balanced/y", edge, via_edge=True)
    _send(forwarder, from_edge, b"m")
    assert io.sent == [] and io.finished == [(b"m", RELEASED)]


def test_multicast_copies_skip_the_edge_it_came_from():
    forwarder, io = make()
    edge = object()
    _link(forwarder, "edge-in", False, "multicast/z", edge, via_edge=True)
    _link(forwarder, "a", False, "multicast/z", object())
    _link(forwarder, "b", False, "multicast/z", object())
    from_edge = _link(forwarder, "edge-out", True, "multicast/z", edge, via_edge=True)
    _send(forwarder, from_edge, b"m")
    assert sorted(name for name, _, _ in io.sent) == ["a", "b"]
    assert io.finished == [(b"m", ACCEPTED)]
