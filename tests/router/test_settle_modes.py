"""Settlement when the router takes shortcuts on its data path: producers that declare a
fixed snd-settle-mode (the router then does not ask proton per message whether a delivery
arrived settled), and the router-wide table of outgoing deliveries that consumers'
dispositions are matched against (entries must leave with the deliveries and links)."""

from __future__ import annotations

from proton.reactor import AtLeastOnce, AtMostOnce

from .amqpclient import ACCEPTED, MODIFIED, REJECTED, RELEASED, Client, Net, SenderLink, msg
from .routerproc import Router


def _sender(client: Client, address: str, options: object) -> SenderLink:
    """A sender whose attach declares a settle mode (the test client's default is mixed)."""
    link = client.net.container.create_sender(client.conn, address, name=f"fixed-{address}",
                                               options=options)
    wrapper = SenderLink(client, link)
    client.links[f"fixed-{address}"] = wrapper
    client.net.wait(lambda: wrapper.remote_opened or wrapper.remote_closed, 10, "sender attach")
    return wrapper


def test_unsettled_mode_producer_gets_each_consumer_outcome(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("modes.unsettled", settle=None, credit=300)
    snd = _sender(net.connect(router.url), "modes.unsettled", AtLeastOnce())
    tags = [snd.send(msg(i)) for i in range(200)]
    net.wait(lambda: len(rcv.received) == 200, 10, "200 messages at the consumer")
    assert not any(r.arrived_settled for r in rcv.received), "declared unsettled: none arrives settled"
    net.pump(0.2)
    assert not snd.outcomes, "the router settled before the consumer did"
    rcv.settle_unsettled(REJECTED, count=50)
    rcv.settle_unsettled(RELEASED, count=50)
    rcv.settle_unsettled(MODIFIED, count=50, failed=True)
    rcv.settle_unsettled(ACCEPTED)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "an outcome for every message")
    states = [snd.outcomes[t].state for t in tags]
    assert states == [REJECTED] * 50 + [RELEASED] * 50 + [MODIFIED] * 50 + [ACCEPTED] * 50


def test_settled_mode_producer_messages_arrive_settled(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("modes.settled", settle=None, credit=300)
    snd = _sender(net.connect(router.url), "modes.settled", AtMostOnce())
    for i in range(100):
        snd.send(msg(i))
    net.wait(lambda: len(rcv.received) == 100, 10, "100 messages at the consumer")
    assert all(r.arrived_settled for r in rcv.received)
    assert rcv.bodies() == list(range(100))


def test_unsettled_mode_producer_settling_first_settles_downstream(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("modes.first", settle=None, credit=10)
    snd = _sender(net.connect(router.url), "modes.first", AtLeastOnce())
    sent = snd.link.delivery("first")
    snd.link.send(msg("gone").encode())
    snd.link.advance()
    net.wait(lambda: len(rcv.received) == 1, 10, "the message at the consumer")
    held = rcv.unsettled[0]
    sent.settle()  # the producer no longer cares about the outcome
    net.wait(lambda: bool(held.settled), 10, "the router settling the consumer's delivery")


def test_consumer_leaving_with_unsettled_deliveries_leaves_no_stale_entries(router: Router, net: Net) -> None:
    """A consumer detaches holding 100 unsettled deliveries (proton frees them, and may hand
    their memory to new deliveries); then 500 more messages go to a new consumer. A stale
    entry in the router's outgoing table would take a new delivery for a disposition."""
    leaving = net.connect(router.url).receiver("modes.stale", settle=None, credit=100, refill=False)
    snd = _sender(net.connect(router.url), "modes.stale", AtLeastOnce())
    first = [snd.send(msg(i)) for i in range(100)]
    net.wait(lambda: len(leaving.received) == 100, 10, "100 messages at the leaving consumer")
    leaving.close()
    net.wait(lambda: all(t in snd.outcomes for t in first), 10, "outcomes for the first 100")
    assert {snd.outcomes[t].state for t in first} == {MODIFIED}
    staying = net.connect(router.url).receiver("modes.stale", credit=100)
    later = [snd.send(msg(i)) for i in range(100, 600)]
    net.wait(lambda: all(t in snd.outcomes for t in later), 20, "outcomes for the next 500")
    assert {snd.outcomes[t].state for t in later} == {ACCEPTED}
    assert staying.bodies() == list(range(100, 600))
