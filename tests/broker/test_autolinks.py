"""Auto-links to a real RabbitMQ queue (Qpid Dispatch 0.7 book, 2.5, 2.5.1): the queue waypoint
example end to end, and the auto-links' state as the broker comes and goes."""

from __future__ import annotations

from typing import List

import pytest

from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle

from .conftest import BrokerFactory
from .rabbit import RabbitBroker
from .waypoint import (
    ACTIVATE_TIMEOUT,
    address_rows,
    autolinks,
    connector,
    connector_status,
    qdstat_json,
    qdstat_text,
    queue_links,
    wait_for,
    wait_statuses,
    waypoint_router,
)

ADDR = "queue.first"
IN = (ADDR, "in", "broker")
OUT = (ADDR, "out", "broker")
DOWN = ("inactive", "attaching", "failed")


def _counts(router, phase: str) -> tuple:  # type: ignore[no-untyped-def]
    row = address_rows(router, ADDR).get(phase)
    return (int(row["in"]), int(row["out"])) if row else None


def _round_trip(net: Net, url: str, bodies: List[str]) -> None:
    """Producer and consumer on the router: every message accepted, and every one received."""
    client = net.connect(url)
    rcv = client.receiver(ADDR)
    snd = client.sender(ADDR)
    outcomes = send_and_settle(net, snd, [msg(b) for b in bodies], timeout=20)
    assert [o.state for o in outcomes] == [ACCEPTED] * len(bodies), [o.name for o in outcomes]
    net.wait(lambda: len(rcv.received) >= len(bodies), 20, f"{len(bodies)} messages back from the queue")
    assert sorted(rcv.bodies()) == sorted(bodies)
    client.close()


def test_queue_waypoint_example(broker: RabbitBroker, router_factory, net: Net,  # type: ignore[no-untyped-def]
                                queue_name: str) -> None:
    """Qpid Dispatch 0.7 book, 2.5.1: three messages through queue.first land in the broker queue
    (phase 0), then a consumer on the router gets them from it (phase 1); qdstat shows it all."""
    router = waypoint_router(router_factory, {"broker": broker},
                             queue_links(ADDR, f"/queue/{queue_name}", "broker"))
    wait_statuses(router, [IN, OUT], ["active"])

    rows = {(r["addr"], r["dir"]): r for r in qdstat_json(router, "--autolinks")}
    assert set(rows) == {(ADDR, "in"), (ADDR, "out")}, rows
    assert str(rows[(ADDR, "in")]["phase"]) == "1" and str(rows[(ADDR, "out")]["phase"]) == "0"
    for r in rows.values():
        assert r["status"] == "active" and r["link"] not in (None, "", "-"), r
    text = qdstat_text(router, "--autolinks")
    assert text.splitlines()[0] == "AutoLinks" and text.count("active") == 2, text

    addresses = address_rows(router, ADDR)
    assert set(addresses) == {"0", "1"}, f"qdstat -a should list {ADDR} in phases 0 and 1: {addresses}"
    assert addresses["0"]["class"] == "mobile" and addresses["0"]["distrib"] == "balanced"
    assert int(addresses["0"]["local"]) == 1, "the out auto-link is phase 0's one local destination"
    assert _counts(router, "0") == (0, 0) and _counts(router, "1") == (0, 0)

    # simple_send.py -m3: all messages confirmed (the broker's accepted comes back)
    producer = net.connect(router.url)
    snd = producer.sender(ADDR)
    outcomes = send_and_settle(net, snd, [msg({"sequence": i}) for i in (1, 2, 3)], timeout=20)
    assert [o.name for o in outcomes] == ["accepted"] * 3
    producer.close()
    wait_for(lambda: (_counts(router, "0") == (3, 3), address_rows(router, ADDR)), 10,
             "phase 0 in=3 out=3")
    assert _counts(router, "1") == (0, 0)
    # With no consumer on the router the three wait in the broker's queue, not in the router.
    assert broker.queue_depth(queue_name) == 3

    # simple_recv.py -m3: the queued messages come back through phase 1
    consumer = net.connect(router.url)
    rcv = consumer.receiver(ADDR)
    net.wait(lambda: len(rcv.received) == 3, 20, "the three queued messages")
    assert rcv.bodies() == [{"sequence": 1}, {"sequence": 2}, {"sequence": 3}]
    net.pump(0.5)
    assert len(rcv.received) == 3
    wait_for(lambda: (_counts(router, "1") == (3, 3), address_rows(router, ADDR)), 10,
             "phase 1 in=3 out=3")
    assert _counts(router, "0") == (3, 3)
    consumer.close()
    wait_for(lambda: (broker.queue_depth(queue_name) == 0, None), 10, "the broker queue to be empty")


def test_book_attribute_names_and_container_id(broker: RabbitBroker, router_factory,  # type: ignore[no-untyped-def]
                                               net: Net, queue_name: str) -> None:
    """addr/dir/externalAddr (the 0.7 names) and containerId instead of connection."""
    cid = broker.container_id
    assert cid
    router = waypoint_router(router_factory, {"broker": broker},
                             queue_links(ADDR, f"/queue/{queue_name}", None, container_id=cid,
                                         old_names=True))
    wait_statuses(router, [(ADDR, "in", cid), (ADDR, "out", cid)], ["active"])
    _round_trip(net, router.url, [f"c{i}" for i in range(5)])


@pytest.mark.timeout(300)
def test_state_follows_the_broker(broker_factory: BrokerFactory, router_factory,  # type: ignore[no-untyped-def]
                                  net: Net) -> None:
    """Broker down at router start: inactive/attaching, connector Waiting; broker up: active;
    broker stopped: not active; broker back: active again, same router."""
    b = broker_factory()
    router = waypoint_router(router_factory, {"broker": b}, queue_links(ADDR, "/queue/state", "broker"))
    seen = wait_statuses(router, [IN, OUT], ["inactive", "attaching"], timeout=10)
    assert all(seen[k][0] in ("inactive", "attaching") for k in (IN, OUT)), seen
    status, message = connector_status(router, "broker")
    assert status in ("Waiting", "Connecting"), (status, message)
    rows = {(r["addr"], r["dir"]): r for r in qdstat_json(router, "--autolinks")}
    assert {r["status"] for r in rows.values()} <= {"inactive", "attaching"}, rows

    b.start()
    wait_statuses(router, [IN, OUT], ["active"], timeout=ACTIVATE_TIMEOUT)
    assert connector_status(router, "broker")[0] == "Operational"
    _round_trip(net, router.url, ["up-1", "up-2"])

    b.stop()
    seen = wait_statuses(router, [IN, OUT], DOWN, timeout=20)
    assert connector_status(router, "broker")[0] != "Operational"

    b.start()
    wait_statuses(router, [IN, OUT], ["active"], timeout=ACTIVATE_TIMEOUT)
    _round_trip(net, router.url, ["again-1", "again-2", "again-3"])
    assert router.is_running()


def test_missing_queue_fails_with_the_brokers_error(broker: RabbitBroker, router_factory,  # type: ignore[no-untyped-def]
                                                    queue_name: str) -> None:
    """RabbitMQ refuses a receiver on /amq/queue/NAME when NAME does not exist (it ends the
    whole session with amqp:not-found): the `in` auto-link is failed, lastError names the
    broker's error, and the router survives."""
    missing = f"/amq/queue/{queue_name}-absent"
    router = waypoint_router(router_factory, {"broker": broker},
                             queue_links("queue.missing", missing, "broker")
                             + queue_links(ADDR, f"/queue/{queue_name}", "broker"))
    bad = ("queue.missing", "in", "broker")
    seen = wait_statuses(router, [bad], ["failed"], timeout=30)
    error = str(seen[bad][1] or "")
    assert "NOT_FOUND" in error or "not-found" in error or "no queue" in error, seen[bad]
    rows = [r for r in qdstat_json(router, "--autolinks")
            if r["addr"] == "queue.missing" and r["dir"] == "in"]
    assert rows and rows[0]["status"] == "failed" and rows[0]["lastErr"], rows
    # The router keeps running and lists every auto-link; the good queue's auto-links (on the
    # same broker connection) are not left down by the broker's refusal of the bad one.
    assert len(autolinks(router)) == 4
    wait_statuses(router, [IN, OUT], ["active"], timeout=30)


def test_two_queues_in_a_row_with_ingress_and_egress_phases(  # type: ignore[no-untyped-def]
        broker: RabbitBroker, broker2: RabbitBroker, router_factory, net: Net, queue_name: str) -> None:
    """address { ingressPhase: 0, egressPhase: 2 }: producers' messages go into a queue on
    the first broker (phase 0), come back out of it in phase 1, go into a queue on the second
    broker and come out of that in phase 2, where consumers are; qdstat -a shows all three
    phases carrying every message."""
    chain = "chain.orders"
    first, second = f"/queue/{queue_name}-1", f"/queue/{queue_name}-2"
    extra = connector("b1", broker) + connector("b2", broker2)
    extra += "address {\n    prefix: chain\n    ingressPhase: 0\n    egressPhase: 2\n}\n"
    for direction, phase, conn, external in (("out", 0, "b1", first), ("in", 1, "b1", first),
                                             ("out", 1, "b2", second), ("in", 2, "b2", second)):
        extra += (f"autoLink {{\n    address: {chain}\n    direction: {direction}\n    phase: {phase}\n"
                  f"    connection: {conn}\n    externalAddress: {external}\n}}\n")
    router = router_factory(router_id="R", addresses={}, extra_config=extra)
    keys = [(chain, d, c) for d in ("in", "out") for c in ("b1", "b2")]
    wait_statuses(router, keys, ["active"])

    bodies = [f"c{i}" for i in range(3)]
    outcomes = send_and_settle(net, net.connect(router.url).sender(chain), [msg(b) for b in bodies],
                               timeout=20)
    assert [o.name for o in outcomes] == ["accepted"] * 3
    rcv = net.connect(router.url).receiver(chain)
    net.wait(lambda: len(rcv.received) == 3, 30, "the messages after both queues")
    assert rcv.bodies() == bodies
    wait_for(lambda: ((c := {ph: (int(r["in"]), int(r["out"]))
                            for ph, r in address_rows(router, chain).items()})
                      == {"0": (3, 3), "1": (3, 3), "2": (3, 3)}, c), 10,
             "phases 0, 1 and 2 each in=3 out=3")
    assert (broker.queue_depth(f"{queue_name}-1") or 0) == 0
    assert (broker2.queue_depth(f"{queue_name}-2") or 0) == 0
