"""Direction ``in``: a client sender whose target matches a link route is passed to the container;
the container's outcomes, settlement and credit reach the client sender unchanged."""

from __future__ import annotations

import pytest
from proton import Condition

from tests.router.amqpclient import (
    ACCEPTED,
    MODIFIED,
    REJECTED,
    RELEASED,
    SIZES,
    Net,
    message_of_size,
    msg,
    send_and_settle,
)
from tests.router.delivery_states import EXPECTED, exchange
from tests.router.routerproc import Router

from .lrutil import Peer, both_ways


def test_each_outcome_reaches_the_client_sender(edge: Router, container: Router, net: Net) -> None:
    consumer = net.connect(container.url).receiver("lr.outcomes", settle=None)
    snd = net.connect(edge.url).sender("lr.outcomes")
    assert snd.remote_opened and not snd.remote_closed, snd.remote_condition
    tags = [snd.send(msg(f"m{i}")) for i in range(4)]
    net.wait(lambda: len(consumer.received) == 4, 10, "4 messages at the container's consumer")
    assert consumer.bodies() == ["m0", "m1", "m2", "m3"]
    net.pump(0.3)
    assert snd.outcomes == {}, f"nothing may be settled before the container decides: {snd.outcomes}"

    consumer.settle_unsettled(ACCEPTED, count=1)
    consumer.settle_unsettled(REJECTED, count=1, condition=Condition("app:bad-order", "order 42 is bad",
                                                                     {"order": 42}))
    consumer.settle_unsettled(RELEASED, count=1)
    consumer.settle_unsettled(MODIFIED, count=1, failed=True, undeliverable=True)
    net.wait(lambda: snd.all_settled(), 10, "all four outcomes at the client sender")

    got = [snd.outcomes[t] for t in tags]
    assert [o.state for o in got] == [ACCEPTED, REJECTED, RELEASED, MODIFIED], [o.name for o in got]
    cond = got[1].condition
    assert cond is not None and cond.name == "app:bad-order" and cond.description == "order 42 is bad", cond
    assert got[3].failed and got[3].undeliverable, got[3]


def test_outcome_details_pass_unchanged(net: Net, edge_factory) -> None:  # type: ignore[no-untyped-def]
    """A container's rejected condition (name, description, info map) and modified
    message-annotations reach the client as the container sent them."""
    peer = Peer(net, hold=True)
    edge = edge_factory(both_ways("lr", connection="peer"), {"peer": peer.port})
    net.wait(lambda: bool(peer.connections), 20, "the router to connect to the peer")
    snd = net.connect(edge.url).sender("lr.details")
    plink = peer.wait_link("lr.details")
    tags = [snd.send(msg(i)) for i in range(2)]
    net.wait(lambda: len(plink.unsettled) == 2, 10, "2 messages held at the peer")
    rejected, modified = plink.unsettled
    rejected.local.condition = Condition("app:bad-order", "order 42 is bad", {"order": 42})
    rejected.update(REJECTED)
    rejected.settle()
    modified.local.failed = True
    modified.local.annotations = {"x-opt-retry": 3}
    modified.update(MODIFIED)
    modified.settle()
    net.wait(lambda: snd.all_settled(), 10, "both outcomes at the client")
    r, m = (snd.outcomes[t] for t in tags)
    assert r.state == REJECTED and r.condition is not None, r
    assert (r.condition.name, r.condition.description) == ("app:bad-order", "order 42 is bad"), r.condition
    assert m.state == MODIFIED and m.failed and not m.undeliverable, m
    assert m.annotations == {"x-opt-retry": 3}, f"modified annotations: {m.annotations!r}"
    assert r.condition.info == {"order": 42}, f"rejected condition info lost: {r.condition.info!r}"


@pytest.mark.c_router_bug("a consumer's modified with delivery-failed false and undeliverable-here true "
                          "reaches the producer through qdrouterd with delivery-failed true")
def test_modified_without_flags_and_partial_flags(edge: Router, container: Router, net: Net) -> None:
    consumer = net.connect(container.url).receiver("lr.modified", settle=None)
    snd = net.connect(edge.url).sender("lr.modified")
    tags = [snd.send(msg(i)) for i in range(2)]
    net.wait(lambda: len(consumer.received) == 2, 10, "2 messages at the consumer")
    consumer.settle_unsettled(MODIFIED, count=1, failed=True, undeliverable=False)
    consumer.settle_unsettled(MODIFIED, count=1, failed=False, undeliverable=True)
    net.wait(lambda: snd.all_settled(), 10, "both outcomes")
    a, b = (snd.outcomes[t] for t in tags)
    assert (a.state, a.failed, a.undeliverable) == (MODIFIED, True, False), a
    assert (b.state, b.failed, b.undeliverable) == (MODIFIED, False, True), b


def test_message_passes_byte_for_byte(edge: Router, container: Router, net: Net) -> None:
    """Link routing does not re-route or annotate per message: the container gets the message as
    sent, whatever its ``to`` field says (messages to other addresses still go down the link)."""
    consumer = net.connect(container.url).receiver("lr.bytes")
    snd = net.connect(edge.url).sender("lr.bytes")
    big = "x" * 200_000
    sent = [msg("small", to="somewhere.else", subject="s", properties={"k": 1}), msg(big)]
    outcomes = send_and_settle(net, snd, sent)
    assert [o.state for o in outcomes] == [ACCEPTED, ACCEPTED]
    net.wait(lambda: len(consumer.received) == 2, 10, "2 messages")
    first, second = consumer.received
    assert first.message.address == "somewhere.else" and first.message.properties == {"k": 1}
    assert second.message.body == big


def test_presettled_pass_through(edge: Router, container: Router, net: Net) -> None:
    consumer = net.connect(container.url).receiver("lr.presettled")
    snd = net.connect(edge.url).sender("lr.presettled", presettled=True)
    assert snd.remote_opened and not snd.remote_closed, snd.remote_condition
    for i in range(20):
        snd.send(msg(i))
    net.wait(lambda: len(consumer.received) == 20, 10, "20 pre-settled messages at the consumer")
    assert consumer.bodies() == list(range(20)), "order must be kept on a routed link"
    assert all(r.arrived_settled for r in consumer.received), "pre-settled deliveries must arrive settled"


@pytest.mark.c_router_bug("qdrouterd's routed attach says snd-settle-mode mixed for a client sender that "
                          "attached settled")
def test_settle_mode_reaches_the_container(net: Net, edge_factory) -> None:  # type: ignore[no-untyped-def]
    """The routed attach carries the client's snd-settle-mode (the container sees a pre-settled link)."""
    peer = Peer(net)
    edge = edge_factory(both_ways("lr", connection="peer"), {"peer": peer.port})
    net.wait(lambda: bool(peer.connections), 20, "the router to connect to the peer")
    snd = net.connect(edge.url).sender("lr.mode", presettled=True)
    plink = peer.wait_link("lr.mode")
    assert snd.remote_opened and not snd.remote_closed, snd.remote_condition
    assert plink.link.remote_snd_settle_mode == plink.link.SND_SETTLED
    snd.send(msg("one"))
    net.wait(lambda: len(plink.messages) == 1, 10, "the message at the peer")


def test_sender_credit_comes_from_the_container(net: Net, edge_factory) -> None:  # type: ignore[no-untyped-def]
    """The client sender's credit is the container's: the peer grants 10, so 10 go and the rest wait."""
    peer = Peer(net, credit=3)
    edge = edge_factory(both_ways("lr", connection="peer"), {"peer": peer.port})
    net.wait(lambda: bool(peer.connections), 20, "the router to connect to the peer")
    snd = net.connect(edge.url).sender("lr.credit")
    plink = peer.wait_link("lr.credit")
    net.wait(lambda: snd.credit == 3, 5, f"credit 3 at the client (has {snd.credit})")
    for i in range(5):
        snd.send(msg(i))
    net.wait(lambda: len(plink.messages) == 3, 10, "3 messages at the peer")
    net.pump(0.5)
    assert len(plink.messages) == 3, "more messages than the container's credit went through"
    plink.link.flow(2)
    net.wait(lambda: len(plink.messages) == 5, 10, "the last 2 after more credit")
    net.wait(lambda: snd.all_settled(), 10, "accepted outcomes from the peer")
    assert snd.outcome_counts() == {"accepted": 5}


def test_presettled_multi_frame_messages_pass_whole(edge: Router, container: Router, net: Net) -> None:
    """A client that settles a large message as it sends it (pre-settled, several frames):
    the routed link passes the whole message on, not the part that had arrived."""
    consumer = net.connect(container.url).receiver("lr.large")
    snd = net.connect(edge.url).sender("lr.large", presettled=True)
    assert snd.remote_opened and not snd.remote_closed, snd.remote_condition
    sent = [message_of_size(size, "lr.large") for size in SIZES]
    net.wait(lambda: snd.credit >= len(sent), 10, "credit for the client sender")
    for m in sent:
        snd.send(m)
    net.wait(lambda: len(consumer.received) == len(sent), 20,
             f"every message at the container's consumer (have {len(consumer.received)})")
    assert [r.message.body for r in consumer.received] == [m.body for m in sent]


def test_received_and_custom_states_pass_through_a_routed_link(edge: Router, container: Router,
                                                                 net: Net) -> None:
    consumer = net.connect(container.url).receiver("lr.states", settle=None)
    snd = net.connect(edge.url).sender("lr.states")
    tags = [snd.send(msg(n)) for n in range(3)]
    net.wait(lambda: len(consumer.received) == 3, 10, "3 messages at the container's consumer")
    assert exchange(net, consumer, snd, tags) == [EXPECTED] * 3
