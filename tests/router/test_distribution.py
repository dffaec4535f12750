"""Distribution patterns: multicast, balanced, closest, and prefix matching of address config."""

from __future__ import annotations

from collections import Counter
from typing import List

from .amqpclient import ACCEPTED, Net, msg, send_and_settle
from .routerproc import Router, RouterFactory


def test_multicast_every_receiver_gets_every_message(router: Router, net: Net) -> None:
    """Three subscribers on a multicast address each get one copy of every message, in order.

    The sender's unsettled deliveries are all settled as accepted (qdrouterd accepts a
    multicast delivery on behalf of the consumers once it has forwarded the copies).
    """
    receivers = [net.connect(router.url).receiver("multicast.news") for _ in range(3)]
    snd = net.connect(router.url).sender("multicast.news")
    outcomes = send_and_settle(net, snd, [msg(f"news {i}") for i in range(20)])
    assert [o.state for o in outcomes] == [ACCEPTED] * 20
    net.wait(lambda: all(len(r.received) >= 20 for r in receivers), 10, "20 copies at each receiver")
    net.pump(0.2)
    for r in receivers:
        assert r.bodies() == [f"news {i}" for i in range(20)]


def test_multicast_presettled(router: Router, net: Net) -> None:
    receivers = [net.connect(router.url).receiver("multicast.ticks") for _ in range(3)]
    snd = net.connect(router.url).sender("multicast.ticks", presettled=True)
    net.wait(lambda: snd.credit > 0, 10, "credit for the multicast sender")
    for i in range(50):
        snd.send(msg(i))
    net.wait(lambda: all(len(r.received) >= 50 for r in receivers), 10, "50 copies at each receiver")
    for r in receivers:
        assert r.bodies() == list(range(50))
        assert all(x.arrived_settled for x in r.received)


def test_multicast_receiver_joining_later_gets_only_new_messages(router: Router, net: Net) -> None:
    c = net.connect(router.url)
    early = c.receiver("multicast.late")
    snd = c.sender("multicast.late")
    send_and_settle(net, snd, [msg("before")])
    late = c.receiver("multicast.late")
    send_and_settle(net, snd, [msg("after")])
    net.wait(lambda: len(early.received) == 2 and len(late.received) == 1, 10, "copies")
    assert early.bodies() == ["before", "after"]
    assert late.bodies() == ["after"]


def test_balanced_favours_consumers_that_keep_up(router: Router, net: Net) -> None:
    """Balanced: each message goes to exactly one of 3 consumers; one that holds its
    deliveries unsettled (slow) gets fewer than the two that settle at once.

    Messages are produced in batches of 10, each batch delivered before the next is sent,
    so the fast consumers' settlements are visible to the router. All consumers have the
    same credit window (50, topped up per message): credit is not what limits the slow
    one; the router must balance on outstanding (unsettled) deliveries.
    """
    fast1 = net.connect(router.url).receiver("balanced.work", credit=50)
    fast2 = net.connect(router.url).receiver("balanced.work", credit=50)
    slow = net.connect(router.url).receiver("balanced.work", credit=50, settle=None)
    snd = net.connect(router.url).sender("balanced.work")
    total = 300
    tags: List[str] = []
    for batch in range(0, total, 10):
        tags += [snd.send(msg(i)) for i in range(batch, batch + 10)]
        net.wait(lambda n=batch + 10: len(fast1.received) + len(fast2.received) + len(slow.received) == n,
                 10, f"delivery of messages up to {batch + 10}")
        net.wait(lambda: snd.settled_count() == len(fast1.received) + len(fast2.received), 10,
                 "the fast consumers' settlements to reach the sender")
    counts = {"fast1": len(fast1.received), "fast2": len(fast2.received), "slow": len(slow.received)}
    seen = Counter(b for r in (fast1, fast2, slow) for b in r.bodies())
    assert set(seen) == set(range(total)) and max(seen.values()) == 1, "each message exactly once"
    assert counts["fast1"] > 0 and counts["fast2"] > 0, counts
    assert counts["slow"] < min(counts["fast1"], counts["fast2"]), counts
    assert counts["slow"] < total // 3, counts
    # once the slow consumer settles, every message is accepted
    slow.settle_unsettled(ACCEPTED)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "all outcomes")
    assert snd.outcome_counts() == {"accepted": total}


def test_balanced_is_default_distribution(router: Router, net: Net) -> None:
    """An address matching no configured prefix is balanced: spread, each message once."""
    receivers = [net.connect(router.url).receiver("unconfigured.jobs", credit=10) for _ in range(3)]
    snd = net.connect(router.url).sender("unconfigured.jobs")
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(60)])
    assert all(o.state == ACCEPTED for o in outcomes)
    net.pump(0.2)
    all_bodies = [b for r in receivers for b in r.bodies()]
    assert sorted(all_bodies) == list(range(60)), "each message exactly once"
    assert all(len(r.received) > 0 for r in receivers), [len(r.received) for r in receivers]


def test_closest_each_message_to_exactly_one_consumer(router: Router, net: Net) -> None:
    """Closest with three local consumers: one copy per message, never duplicated or lost.
    (In standalone mode every consumer is local, so "local first" is all there is.)"""
    receivers = [net.connect(router.url).receiver("closest.svc") for _ in range(3)]
    snd = net.connect(router.url).sender("closest.svc")
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(30)])
    assert all(o.state == ACCEPTED for o in outcomes)
    net.pump(0.3)
    all_bodies = sorted(b for r in receivers for b in r.bodies())
    assert all_bodies == list(range(30))


def test_closest_fails_over_when_consumer_leaves(router: Router, net: Net) -> None:
    c1 = net.connect(router.url)
    first = c1.receiver("closest.failover")
    second = net.connect(router.url).receiver("closest.failover")
    snd = net.connect(router.url).sender("closest.failover")
    send_and_settle(net, snd, [msg(i) for i in range(6)])
    c1.close()
    outcomes = send_and_settle(net, snd, [msg(f"after {i}") for i in range(6)])
    assert all(o.state == ACCEPTED for o in outcomes), [o.name for o in outcomes]
    assert [b for b in second.bodies() if isinstance(b, str)] == [f"after {i}" for i in range(6)]
    assert len(first.received) + len(second.received) == 12


def test_longest_prefix_match_selects_distribution(router_factory: RouterFactory, net: Net) -> None:
    """'orders.fanout' (multicast) is more specific than 'orders' (closest)."""
    router = router_factory(addresses={"orders": "closest", "orders.fanout": "multicast"})
    fan = [net.connect(router.url).receiver("orders.fanout.eu") for _ in range(2)]
    one = [net.connect(router.url).receiver("orders.single") for _ in range(2)]
    snd = net.connect(router.url).sender(None)
    send_and_settle(net, snd, [msg(f"f{i}", to="orders.fanout.eu") for i in range(5)]
                    + [msg(f"s{i}", to="orders.single") for i in range(5)])
    net.wait(lambda: all(len(r.received) == 5 for r in fan), 10, "multicast copies")
    net.pump(0.2)
    for r in fan:
        assert r.bodies() == [f"f{i}" for i in range(5)]
    assert sorted(b for r in one for b in r.bodies()) == [f"s{i}" for i in range(5)]


def test_multicast_receiver_without_credit_does_not_block_others(router: Router, net: Net) -> None:
    stuck = net.connect(router.url).receiver("multicast.stuck", credit=0)
    ok = [net.connect(router.url).receiver("multicast.stuck") for _ in range(2)]
    snd = net.connect(router.url).sender("multicast.stuck")
    net.wait(lambda: snd.credit > 0, 10, "credit for the multicast sender")
    for i in range(20):
        snd.send(msg(i))
    net.wait(lambda: all(len(r.received) == 20 for r in ok), 10, "copies at the receivers with credit")
    assert stuck.received == []
    stuck.flow(20)
    net.wait(lambda: len(stuck.received) == 20, 10, "its copies once the stuck receiver grants credit")
    assert stuck.bodies() == list(range(20))
