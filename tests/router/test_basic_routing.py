"""Basic message routing through a standalone router: addressing by link and by message."""

from __future__ import annotations

import uuid

from proton import Message

from .amqpclient import ACCEPTED, RELEASED, Net, msg, send_and_settle
from .routerproc import Router, RouterFactory


def test_send_receive_unsettled(router: Router, net: Net) -> None:
    """A message sent to an address reaches the subscriber, and the sender sees it accepted."""
    rc = net.connect(router.url)
    rcv = rc.receiver("queue.basic")
    sc = net.connect(router.url)
    snd = sc.sender("queue.basic")
    outcomes = send_and_settle(net, snd, [msg(f"hello {i}") for i in range(5)])
    assert [o.name for o in outcomes] == ["accepted"] * 5
    assert rcv.bodies() == [f"hello {i}" for i in range(5)]
    assert not any(r.arrived_settled for r in rcv.received), "unsettled sends must arrive unsettled"


def test_presettled_stays_presettled(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("queue.presettled")
    snd = net.connect(router.url).sender("queue.presettled", presettled=True)
    net.wait(lambda: snd.credit > 0, 10, "credit for the sender")
    for i in range(10):
        snd.send(msg(i))
    net.wait(lambda: len(rcv.received) == 10, 10, "10 pre-settled messages")
    assert rcv.bodies() == list(range(10))
    assert all(r.arrived_settled for r in rcv.received), "pre-settled messages must arrive pre-settled"


def test_same_connection_sender_and_receiver(router: Router, net: Net) -> None:
    c = net.connect(router.url)
    rcv = c.receiver("queue.loopback")
    snd = c.sender("queue.loopback")
    assert [o.state for o in send_and_settle(net, snd, [msg("loop")])] == [ACCEPTED]
    assert rcv.bodies() == ["loop"]


def test_addresses_are_isolated(router: Router, net: Net) -> None:
    """A subscriber only sees messages for its own address."""
    c = net.connect(router.url)
    a = c.receiver("iso.a")
    b = c.receiver("iso.b")
    snd_a = c.sender("iso.a")
    snd_b = c.sender("iso.b")
    send_and_settle(net, snd_a, [msg("for a")])
    send_and_settle(net, snd_b, [msg("for b 1"), msg("for b 2")])
    net.pump(0.2)
    assert a.bodies() == ["for a"]
    assert b.bodies() == ["for b 1", "for b 2"]


def test_anonymous_sender_routes_by_to(router: Router, net: Net) -> None:
    c = net.connect(router.url)
    x = c.receiver("anon.x")
    y = c.receiver("anon.y")
    snd = c.sender(None)
    messages = [msg("1", to="anon.x"), msg("2", to="anon.y"), msg("3", to="anon.x")]
    outcomes = send_and_settle(net, snd, messages)
    assert [o.state for o in outcomes] == [ACCEPTED] * 3
    assert x.bodies() == ["1", "3"]
    assert y.bodies() == ["2"]
    assert x.received[0].message.address == "anon.x", "the 'to' field is delivered unchanged"


def test_anonymous_sender_unroutable_message_is_released(router: Router, net: Net) -> None:
    """No consumer for the message's 'to': the sender gets 'released' promptly, not a hang."""
    c = net.connect(router.url)
    ok = c.receiver("anon.present")
    snd = c.sender(None)
    outcomes = send_and_settle(net, snd, [msg("lost", to="anon.nobody-" + uuid.uuid4().hex),
                                          msg("kept", to="anon.present")], timeout=5)
    assert outcomes[0].state == RELEASED
    assert outcomes[1].state == ACCEPTED
    assert ok.bodies() == ["kept"]


def test_to_override_annotation_wins_over_to_only_where_annotations_are_kept(
        router_factory: RouterFactory, net: Net) -> None:
    """x-opt-qd.to routes a message in place of its 'to' when it comes over a connection whose
    annotations the router keeps (stripAnnotations: no or out: another router, a trusted
    client); a client on a listener that strips what comes in (the default, both) cannot
    redirect its messages with it. qdrouterd 1.19 does the same (its parse_annotations)."""
    router = router_factory(extra_listeners={"keeps": {"stripAnnotations": "no"}})
    receiving = net.connect(router.url)
    by_to = receiving.receiver("override.by-to")
    by_annotation = receiving.receiver("override.by-annotation")
    for url, delivered in ((router.url, by_to), (router.urls["keeps"], by_annotation)):
        snd = net.connect(url).sender(None)
        m = msg(f"via {url}", to="override.by-to", annotations={"x-opt-qd.to": "override.by-annotation"})
        assert [o.state for o in send_and_settle(net, snd, [m])] == [ACCEPTED]
        net.wait(lambda d=delivered: len(d.received) == 1, 5, f"the message sent via {url}")
    net.pump(0.2)
    assert by_to.bodies() == [f"via {router.url}"]
    assert by_annotation.bodies() == [f"via {router.urls['keeps']}"]


def test_request_response_with_dynamic_reply_to(router: Router, net: Net) -> None:
    """A dynamic receiver gets a routable address; a service replies to it via reply-to."""
    service_conn = net.connect(router.url)
    requests = service_conn.receiver("service.upper", settle=None)
    replier = service_conn.sender(None)

    client = net.connect(router.url)
    replies = client.receiver(None, dynamic=True)
    reply_to = replies.address
    assert reply_to, "the router must assign an address to a dynamic source"
    other = client.receiver(None, dynamic=True)
    assert other.address and other.address != reply_to, "dynamic addresses must be unique"

    req_sender = client.sender("service.upper")
    tags = [req_sender.send(Message(body=w, reply_to=reply_to, correlation_id=i))
            for i, w in enumerate(["alpha", "beta", "gamma"])]
    net.wait(lambda: len(requests.received) == 3, 10, "3 requests at the service")
    for r in requests.received:
        assert r.message.reply_to == reply_to
        replier.send(Message(address=r.message.reply_to, body=r.message.body.upper(),
                             correlation_id=r.message.correlation_id))
    requests.settle_unsettled(ACCEPTED)
    net.wait(lambda: len(replies.received) == 3, 10, "3 replies at the dynamic receiver")
    assert sorted((r.message.correlation_id, r.message.body) for r in replies.received) == [
        (0, "ALPHA"), (1, "BETA"), (2, "GAMMA")]
    net.wait(lambda: all(t in req_sender.outcomes for t in tags), 10, "request outcomes")
    assert req_sender.outcome_counts() == {"accepted": 3}
    assert other.received == []


def test_dynamic_address_stops_routing_after_detach(router: Router, net: Net) -> None:
    client = net.connect(router.url)
    replies = client.receiver(None, dynamic=True)
    addr = replies.address
    assert addr
    replies.close()
    net.wait(lambda: replies.remote_closed, 5, "detach of the dynamic receiver")
    snd = net.connect(router.url).sender(None)
    outcomes = send_and_settle(net, snd, [msg("late reply", to=addr)], timeout=5)
    assert outcomes[0].state == RELEASED


def test_local_address_delivered_to_local_consumer(router: Router, net: Net) -> None:
    c = net.connect(router.url)
    rcv = c.receiver("_local/test-service")
    snd = c.sender(None)
    outcomes = send_and_settle(net, snd, [msg("local", to="_local/test-service")])
    assert outcomes[0].state == ACCEPTED
    assert rcv.bodies() == ["local"]


def test_many_connections_each_get_their_own_messages(router: Router, net: Net) -> None:
    pairs = []
    for i in range(10):
        c = net.connect(router.url)
        pairs.append((c.receiver(f"conn.{i}"), c.sender(f"conn.{i}")))
    for i, (_, snd) in enumerate(pairs):
        snd.send(msg(f"m{i}"))
    net.wait(lambda: all(len(r.received) == 1 for r, _ in pairs), 10, "one message per connection")
    assert [r.bodies() for r, _ in pairs] == [[f"m{i}"] for i in range(10)]


def test_targeted_sender_routes_by_link_address_not_to(router: Router, net: Net) -> None:
    """A sender attached to a target address routes there whatever the message's 'to' says."""
    c = net.connect(router.url)
    link_addr = c.receiver("target.link")
    to_addr = c.receiver("target.to-field")
    snd = c.sender("target.link")
    assert send_and_settle(net, snd, [msg("m", to="target.to-field")])[0].state == ACCEPTED
    net.pump(0.2)
    assert link_addr.bodies() == ["m"]
    assert to_addr.received == []


def test_anonymous_message_without_to_is_not_accepted(router: Router, net: Net) -> None:
    c = net.connect(router.url)
    c.receiver("anon.someone")
    snd = c.sender(None)
    out = send_and_settle(net, snd, [msg("no destination")], timeout=5)
    assert out[0].state != ACCEPTED, "a message with no address cannot have been delivered"
    assert out[0].state != 0, "the router must give a terminal outcome, not just settle"
