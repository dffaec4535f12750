"""The routing core on its own: distribution, credit windows and returned messages.

RecordingIO is a fake of the proton adaptor (it records what the core asks of it); the
same behaviour is exercised over real sockets in tests/router/.
"""

from __future__ import annotations

from typing import Any, List, Tuple

from qdrouter.core.address_events import AddressListener
from qdrouter.core.address_table import Address, AddressTable, prefix_matches
from qdrouter.core.forwarder import Forwarder
from qdrouter.core.links import DATA, CoreLink, InFlight
from qdrouter.core.mesh_routes import MeshRoutes
from qdrouter.core.outcomes import ACCEPTED, MODIFIED, RELEASED


class RecordingIO:
    def __init__(self) -> None:
        self.sent: List[Tuple[str, bytes, bool]] = []
        self.finished: List[Tuple[bytes, int]] = []
        self._next = 0

    def transmit(self, link: CoreLink, message: InFlight, presettled: bool) -> None:
        self.sent.append((link.name, message.payload, presettled))
        if not presettled:
            self._next += 1
            message.out_link = link
            message.out_key = self._next
            link.unsettled[self._next] = message

    def finish_incoming(self, message: InFlight, outcome: int) -> None:
        if message.delivery is not None:
            message.delivery = None
            self.finished.append((message.payload, outcome))


def make(
    prefixes: Any = (("multicast", "multicast"), ("closest", "closest")),
) -> Tuple[Forwarder, RecordingIO]:
    io = RecordingIO()
    return Forwarder(AddressTable(prefixes), io), io


def consumer(forwarder: Forwarder, name: str, address: str, credit: int) -> CoreLink:
    link = CoreLink(hash(name), name, False, address, None, object())
    forwarder.consumer_attached(link)
    forwarder.consumer_credit(link, credit)
    return link


def producer(forwarder: Forwarder, address: Any) -> CoreLink:
    link = CoreLink(1, "producer", True, address, None, object())
    link.capacity = 10
    forwarder.producer_attached(link)
    return link


def send(forwarder: Forwarder, link: CoreLink, body: bytes, settled: bool = False) -> InFlight:
    message = InFlight(body, body, link, None if settled else object(), settled)
    forwarder.forward(message, forwarder.table.find(link.address_key) if link.address_key else None)
    return message


def test_producer_gets_no_credit_until_a_consumer_exists() -> None:
    forwarder, _ = make()
    link = producer(forwarder, "queue")
    assert link.owed_credit == 0
    consumer(forwarder, "c1", "queue", 5)
    assert link.owed_credit == 10


def test_balanced_prefers_the_consumer_with_fewer_outstanding() -> None:
    forwarder, io = make()
    fast = consumer(forwarder, "fast", "work", 100)
    slow = consumer(forwarder, "slow", "work", 100)
    link = producer(forwarder, "work")
    for index in range(4):
        send(forwarder, link, b"m%d" % index)
    # Fast settles everything it gets; slow settles nothing.
    for _ in range(20):
        for key in list(fast.unsettled):
            del fast.unsettled[key]
            forwarder.consumer_settled(fast)
        send(forwarder, link, b"x")
    counts = {name: sum(1 for sent in io.sent if sent[0] == name) for name in ("fast", "slow")}
    assert counts["fast"] > 3 * counts["slow"]
    assert slow.outstanding == counts["slow"]


def test_closest_takes_turns_between_equal_consumers_and_skips_those_without_credit() -> None:
    forwarder, io = make()
    consumer(forwarder, "a", "closest.x", 100)
    consumer(forwarder, "b", "closest.x", 0)
    link = producer(forwarder, "closest.x")
    for _ in range(5):
        send(forwarder, link, b"m")
    assert {sent[0] for sent in io.sent} == {"a"}


def test_multicast_copies_are_presettled_and_the_sender_is_accepted_when_all_left() -> None:
    forwarder, io = make()
    consumer(forwarder, "a", "multicast.t", 5)
    late = consumer(forwarder, "b", "multicast.t", 0)
    link = producer(forwarder, "multicast.t")
    message = send(forwarder, link, b"m")
    assert io.sent == [("a", b"m", True)]
    assert io.finished == []
    forwarder.consumer_credit(late, 1)
    assert io.sent[-1] == ("b", b"m", True)
    assert io.finished == [(b"m", ACCEPTED)]
    assert message.copies_pending == 0


def test_anonymous_message_without_route_is_released_and_credit_returns() -> None:
    forwarder, io = make()
    link = producer(forwarder, None)
    assert link.owed_credit == 10
    send(forwarder, link, b"lost")
    assert io.finished == [(b"lost", RELEASED)]
    assert link.credit == 10


def test_presettled_without_route_is_counted_as_dropped() -> None:
    forwarder, _ = make()
    link = producer(forwarder, None)
    send(forwarder, link, b"gone", settled=True)
    assert link.counters.dropped_presettled == 1


def test_messages_wait_for_credit_and_producer_credit_is_bounded() -> None:
    forwarder, io = make()
    receiver = consumer(forwarder, "c", "q", 0)
    link = producer(forwarder, "q")
    granted = link.owed_credit
    messages = [send(forwarder, link, b"%d" % index) for index in range(granted)]
    assert io.sent == []
    assert link.credit == 0
    assert len(receiver.address.undelivered) == granted
    forwarder.consumer_credit(receiver, 3)
    assert [sent[1] for sent in io.sent] == [b"0", b"1", b"2"]
    # Sent on but unsettled: each still holds its producer's credit until its outcome, so a
    # producer never has more than its window in the router.
    assert link.credit == 0
    for message in messages[:3]:
        forwarder.settled_upstream(message)
    assert link.credit == 3
    forwarder.settled_upstream(messages[0])  # a second settlement returns nothing more
    assert link.credit == 3


def test_presettled_messages_return_credit_as_they_leave() -> None:
    forwarder, io = make()
    receiver = consumer(forwarder, "c", "q", 0)
    link = producer(forwarder, "q")
    for index in range(link.owed_credit):
        send(forwarder, link, b"%d" % index, settled=True)
    assert link.credit == 0
    forwarder.consumer_credit(receiver, 3)
    assert [sent[1] for sent in io.sent] == [b"0", b"1", b"2"]
    assert link.credit == 3


def test_detached_consumer_returns_unsettled_as_modified_and_queue_as_released() -> None:
    forwarder, io = make()
    receiver = consumer(forwarder, "c", "q", 2)
    link = producer(forwarder, "q")
    for index in range(4):
        send(forwarder, link, b"%d" % index)
    forwarder.consumer_detached(receiver)
    outcomes = sorted(io.finished)
    assert outcomes == [(b"0", MODIFIED), (b"1", MODIFIED), (b"2", RELEASED), (b"3", RELEASED)]


def test_longest_prefix_on_token_boundaries() -> None:
    table = AddressTable([("a", "closest"), ("a.b", "multicast")])
    assert table.distribution_for("a.b.c") == "multicast"
    assert table.distribution_for("a.bc") == "closest"
    assert table.distribution_for("other") == "balanced"
    assert prefix_matches("a/", "a/x") and not prefix_matches("ab", "a")


def test_messages_held_for_another_router_leave_in_order_as_credit_comes_counted_once() -> None:
    # A consumer on router R3, reached over the data link to neighbour R2, which grants
    # credit in small steps (as a busy next router does): what waits is sent in arrival
    # order, and the address counts each message once however often it waited.
    table = AddressTable((("closest", "closest"),))
    io = RecordingIO()
    mesh = MeshRoutes("R1")
    forwarder = Forwarder(table, io, mesh)
    data = CoreLink(7, "to-R2", False, None, None, object())
    data.kind = DATA
    mesh.data_links["R2"] = data
    mesh.update({"R2": ("R2", 1), "R3": ("R2", 2)}, {})
    address = table.get("closest/q")
    address.remote = ["R3"]
    link = producer(forwarder, "closest/q")
    assert link.owed_credit == 10  # routable: a remote consumer exists
    sent = [send(forwarder, link, b"m%d" % index) for index in range(8)]
    assert io.sent == [] and len(address.undelivered) == 8
    granted = 0
    while io.sent != [("to-R2", b"m%d" % index, False) for index in range(8)]:
        assert granted < 8, io.sent
        forwarder.consumer_credit(data, 3)
        granted += 1
    assert granted == 3
    assert address.counters.deliveries_ingress == 8
    assert address.counters.deliveries_transit == 8
    assert all(message.out_link is data for message in sent)


def _two_routes() -> Tuple[Forwarder, RecordingIO, CoreLink, CoreLink, Any]:
    # R1 (us) has data links to neighbours R2 (cost 1) and R3 (cost 5); both consume the
    # closest address, and neither has granted credit yet.
    table = AddressTable((("closest", "closest"),))
    io = RecordingIO()
    mesh = MeshRoutes("R1")
    forwarder = Forwarder(table, io, mesh)
    near = CoreLink(7, "to-R2", False, None, None, object())
    far = CoreLink(8, "to-R3", False, None, None, object())
    for link, router in ((near, "R2"), (far, "R3")):
        link.kind = DATA
        mesh.data_links[router] = link
    mesh.update({"R2": ("R2", 1), "R3": ("R3", 5)}, {})
    address = table.get("closest/q")
    address.remote = ["R2", "R3"]
    return forwarder, io, near, far, address


def test_held_messages_take_whichever_route_gains_credit_in_order_and_wait_for_the_rest() -> None:
    forwarder, io, near, far, address = _two_routes()
    link = producer(forwarder, "closest/q")
    for index in range(6):
        send(forwarder, link, b"m%d" % index)
    assert io.sent == [] and len(address.undelivered) == 6
    forwarder.consumer_credit(far, 3)
    forwarder.consumer_credit(near, 2)
    assert io.sent == [("to-R3", b"m0", False), ("to-R3", b"m1", False), ("to-R3", b"m2", False),
                       ("to-R2", b"m3", False), ("to-R2", b"m4", False)]
    assert [message.payload for message in address.undelivered] == [b"m5"]
    # A message arriving now queues behind m5 rather than overtaking it.
    send(forwarder, link, b"m6")
    forwarder.consumer_credit(near, 5)
    assert [sent[1] for sent in io.sent[5:]] == [b"m5", b"m6"]
    assert not address.undelivered and near.credit == 3


def test_held_messages_never_go_back_toward_a_router_they_passed() -> None:
    forwarder, io, near, far, address = _two_routes()
    producer_link = producer(forwarder, "closest/q")
    own = [InFlight(b"own%d" % i, b"own%d" % i, producer_link, object(), False) for i in range(2)]
    passed = InFlight(b"via-R2", b"via-R2", producer_link, object(), False)
    passed.trace = ["R2"]
    for message in (own[0], passed, own[1]):
        forwarder.forward(message, address)
    forwarder.consumer_credit(near, 10)
    # The message that came through R2 must wait for R3, however much credit R2 offers.
    assert [sent[1] for sent in io.sent] == [b"own0", b"own1"]
    assert list(address.undelivered) == [passed]
    forwarder.consumer_credit(far, 1)
    assert io.sent[-1] == ("to-R3", b"via-R2", False)


def test_the_adaptor_hears_when_an_address_gains_or_changes_remote_consumers() -> None:
    # Producers whose messages wait in the adaptor (for a local consumer's credit) must
    # get another look when other routers start to consume their address, or the paths
    # to them change: their messages may go there now.
    table = AddressTable((("closest", "closest"),))
    mesh = MeshRoutes("R1")
    forwarder = Forwarder(table, RecordingIO(), mesh)
    told: List[str] = []

    class Adaptor(AddressListener):
        def routes_changed(self, address: Address) -> None:
            told.append(address.key)

    forwarder.add_address_listener(Adaptor())
    data = CoreLink(7, "to-R2", False, None, None, object())
    data.kind = DATA
    mesh.data_links["R2"] = data
    consumer(forwarder, "local", "closest/q", 0)
    producer(forwarder, "closest/q")
    consumer(forwarder, "other", "closest/unproduced", 0)
    address = table.get("closest/q")
    address.remote = ["R2"]
    forwarder.remote_consumers_changed(address)
    assert told == ["closest/q"]
    mesh.update({"R2": ("R2", 1)}, {})
    table.get("closest/unproduced").remote = ["R2"]
    forwarder.topology_changed()
    assert told == ["closest/q", "closest/q"], "only addresses with producers are looked at again"
