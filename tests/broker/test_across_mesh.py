"""The broker scenarios across a line of three interior routers A - B - C, RabbitMQ
connected to C only, clients on A: the queue waypoint (phases cross the mesh), a
link-routed receiver with credit and drain, a link-routed sender with outcomes, and the
broker going away and coming back."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Tuple

import pytest

from tests.linkroute.lrutil import NO_ROUTE
from tests.mesh.conftest import mesh_factory as mesh_factory  # fixture line_factory uses
from tests.mesh.meshproc import Mesh
from tests.mesh_linkroute.conftest import LineFactory
from tests.mesh_linkroute.conftest import line_factory as line_factory  # the fixture
from tests.mesh_linkroute.routable import wait_routable
from tests.router.amqpclient import Net, msg, send_and_settle

from .rabbit import RabbitBroker
from .waypoint import (
    ACTIVATE_TIMEOUT,
    address_rows,
    autolinks,
    connector,
    qdmanage,
    qdstat_json,
    queue_links,
    wait_for,
    wait_statuses,
)

# Not under "queue": the link routes' prefix "/queue" takes "queue.x" too (qdrouterd matches
# link routes without the leading '/'), and an attach a link route takes is not a waypoint's.
ADDR = "waypoint.first"
WAYPOINT = "address {\n    prefix: waypoint\n    waypoint: yes\n}\n"
LINK_ROUTES = ("linkRoute {\n    prefix: /queue\n    direction: in\n    connection: broker\n}\n"
               "linkRoute {\n    prefix: /queue\n    direction: out\n    connection: broker\n}\n")


def _line(line_factory: LineFactory, broker: RabbitBroker, c_extra: str, everywhere: str = "") -> Mesh:
    return line_factory({"A": everywhere, "B": everywhere,
                         "C": connector("broker", broker) + everywhere + c_extra})


def _routable(mesh: Mesh, net: Net, address: str, timeout: float = 20.0) -> None:
    """Attaches at A for ``address`` are link-routed, both ways (a router that has not heard
    of the route yet would accept them as ordinary message-routed links)."""
    wait_routable(mesh, net, "A", address, timeout=timeout)
    wait_routable(mesh, net, "A", address, receiving=True, timeout=timeout)


def _remote_phase(mesh: Mesh, router: str, phase: str) -> Dict[str, Any] | None:
    return address_rows(mesh[router], ADDR).get(phase)


def test_queue_waypoint_across_the_mesh(line_factory: LineFactory, broker: RabbitBroker, net: Net,
                                        queue_name: str) -> None:
    mesh = _line(line_factory, broker, queue_links(ADDR, f"/queue/{queue_name}", "broker"), WAYPOINT)
    wait_statuses(mesh["C"], [(ADDR, "in", "broker"), (ADDR, "out", "broker")], ["active"],
                  timeout=ACTIVATE_TIMEOUT)
    # A learns that phase 0 of queue.first (the out auto-link on C) is reachable through C.
    wait_for(lambda: ((row := _remote_phase(mesh, "A", "0")) is not None and int(row["remote"]) == 1, row),
             20, "A to see C's phase-0 destination")
    # The book's qdstat --autolinks, on the broker's router.
    rows = {(r["addr"], r["dir"]): r for r in qdstat_json(mesh["C"], "--autolinks")}
    assert {k: (str(r["phase"]), r["status"]) for k, r in rows.items()} == \
        {(ADDR, "in"): ("1", "active"), (ADDR, "out"): ("0", "active")}, rows

    producer = net.connect(mesh["A"].url)
    outcomes = send_and_settle(net, producer.sender(ADDR), [msg({"sequence": i}) for i in (1, 2, 3)],
                               timeout=30)
    assert [o.name for o in outcomes] == ["accepted"] * 3, [o.name for o in outcomes]
    wait_for(lambda: (broker.queue_depth(queue_name) == 3, broker.queue_depth(queue_name)), 10,
             "three messages in the broker queue")
    # The book's qdstat -a after simple_send, spread over the mesh: phase 0 enters at A (in),
    # crosses A and B (thru) and leaves at C into the queue (out); phase 1 is unused so far.
    assert _io(mesh, "A", "0") == (3, 0, 3) and _io(mesh, "B", "0") == (0, 0, 3), \
        (_io(mesh, "A", "0"), _io(mesh, "B", "0"))
    wait_for(lambda: (_io(mesh, "C", "0") == (0, 3, 0), _io(mesh, "C", "0")), 10, "C: phase 0 out=3")
    assert _io(mesh, "C", "1") == (0, 0, 0)

    consumer = net.connect(mesh["A"].url)
    rcv = consumer.receiver(ADDR)
    net.wait(lambda: len(rcv.received) == 3, 30, "the queued messages back at A through phase 1")
    assert rcv.bodies() == [{"sequence": 1}, {"sequence": 2}, {"sequence": 3}]
    net.pump(0.5)
    assert len(rcv.received) == 3
    wait_for(lambda: (broker.queue_depth(queue_name) == 0, broker.queue_depth(queue_name)), 10,
             "the broker queue to be empty")
    # Phase 1 is consumed on A (a local consumer there), phase 0 is destined for C.
    row1 = _remote_phase(mesh, "A", "1")
    assert row1 is not None and int(row1["local"]) == 1, row1
    row_c = _remote_phase(mesh, "C", "1")
    assert row_c is not None and int(row_c["remote"]) == 1, row_c
    # ... and after simple_recv: phase 1 enters at C from the queue and leaves at A.
    assert _io(mesh, "C", "1") == (3, 0, 3) and _io(mesh, "A", "1") == (0, 3, 0), \
        (_io(mesh, "C", "1"), _io(mesh, "A", "1"))


def _io(mesh: Mesh, router: str, phase: str) -> Tuple[int, int, int] | None:
    """qdstat -a's in, out and thru of ADDR in ``phase`` at ``router``."""
    row = _remote_phase(mesh, router, phase)
    return (int(row["in"]), int(row["out"]), int(row["thru"])) if row is not None else None


def _credit_then_drain(net: Net, url: str, address: str) -> Tuple[List[str], List[str], int]:
    """Two credits, then three more, then a drain of four on an empty queue: what arrived
    after each step, and the credit left once the drain had time to be answered."""
    rcv = net.connect(url).receiver(address, credit=2, refill=False)
    net.wait(lambda: len(rcv.received) == 2, 20, f"two messages for two credits via {url}")
    net.pump(1.0)
    first = list(rcv.bodies())
    rcv.flow(3)
    net.wait(lambda: len(rcv.received) == 5, 20, f"three more for three more credits via {url}")
    rcv.drain(4)
    net.pump(3.0)
    return first, list(rcv.bodies()), rcv.credit


def test_link_routed_receiver_credit_and_drain_against_a_broker_queue(
        line_factory: LineFactory, broker: RabbitBroker, net: Net, queue_name: str) -> None:
    """Credit given at A bounds what the broker behind C sends; drain passes through. (RabbitMQ
    3.10's AMQP 1.0 plugin does not answer a drain: a direct client keeps its credit too, so
    the routed receiver is checked against a direct one here, and drain completion is
    checked against a router container in tests/mesh_linkroute.)"""
    mesh = _line(line_factory, broker, LINK_ROUTES)
    direct_url = f"amqp://127.0.0.1:{broker.port}"
    results = []
    for url, queue in ((direct_url, f"/queue/{queue_name}-direct"), (mesh["A"].url, f"/queue/{queue_name}")):
        outcomes = send_and_settle(net, net.connect(direct_url).sender(queue),
                                   [msg(f"b{i}") for i in range(5)], timeout=20)
        assert [o.name for o in outcomes] == ["accepted"] * 5
        if url != direct_url:
            _routable(mesh, net, queue)
        results.append(_credit_then_drain(net, url, queue))
    direct, routed = results
    assert routed[0] == ["b0", "b1"], "the broker sent more (or other) than two credits allowed"
    assert routed[1] == [f"b{i}" for i in range(5)]
    assert routed == direct, f"a routed receiver behaved unlike a direct one: {routed} vs {direct}"


def test_link_routed_sender_gets_the_brokers_outcomes(line_factory: LineFactory, broker: RabbitBroker,
                                                      net: Net, queue_name: str) -> None:
    mesh = _line(line_factory, broker, LINK_ROUTES)
    address = f"/queue/{queue_name}"
    _routable(mesh, net, address)
    snd = net.connect(mesh["A"].url).sender(address)
    outcomes = send_and_settle(net, snd, [msg(f"s{i}") for i in range(4)], timeout=20)
    assert [o.name for o in outcomes] == ["accepted"] * 4
    wait_for(lambda: (broker.queue_depth(queue_name) == 4, broker.queue_depth(queue_name)), 10,
             "four messages in the queue")


def _refused_no_route(net: Net, url: str, address: str, timeout: float) -> Any:
    """Attach senders at ``url`` until one is refused with no-route-to-dest (while C's
    withdrawal crosses the mesh, an attach may still be routed to C, which refuses it the
    same way); returns the refusal's condition. Every attempt must be answered."""
    deadline = time.monotonic() + timeout
    while True:
        snd = net.connect(url).sender(address)
        cond = snd.remote_condition
        if snd.remote_closed and cond is not None and cond.name == NO_ROUTE:
            return cond
        assert time.monotonic() < deadline, \
            f"{address}: attach not refused with {NO_ROUTE} (last: open={snd.remote_opened}, {cond})"
        net.pump(0.5)


@pytest.mark.timeout(300)
def test_broker_restart_across_the_mesh(line_factory: LineFactory, broker_factory, net: Net) -> None:
    """Auto-links on C go down and come back; link-routed clients on A (a receiver and a
    sender) are detached with an error, never left hanging; new
    routed attaches at A are refused with no-route-to-dest while the broker is away (A has
    the link routes without a connection, as every router of an upstream mesh has them);
    after the restart everything works again."""
    b: RabbitBroker = broker_factory()
    b.start()
    mesh = line_factory({"A": WAYPOINT + LINK_ROUTES.replace("    connection: broker\n", ""),
                         "B": WAYPOINT,
                         "C": connector("broker", b) + WAYPOINT + LINK_ROUTES
                         + queue_links(ADDR, "/queue/restart", "broker")})
    keys = [(ADDR, "in", "broker"), (ADDR, "out", "broker")]
    wait_statuses(mesh["C"], keys, ["active"], timeout=ACTIVATE_TIMEOUT)
    _routable(mesh, net, "/queue/lr-restart")
    client = net.connect(mesh["A"].url)
    routed = client.receiver("/queue/lr-restart", credit=5)
    routed_sender = client.sender("/queue/lr-restart-in")
    assert routed.remote_opened and not routed.remote_closed
    assert routed_sender.remote_opened and not routed_sender.remote_closed

    b.stop()
    net.wait(lambda: routed.remote_closed and routed_sender.remote_closed, 30,
             "both routed links detached when the broker stopped")
    for link in (routed, routed_sender):
        assert link.remote_condition is not None, "a detach after losing the broker carries an error"
    assert client.alive, "only the routed links end, not the client's connection"
    wait_statuses(mesh["C"], keys, ["inactive", "attaching", "failed"], timeout=30)
    cond = _refused_no_route(net, mesh["A"].url, "/queue/lr-restart", timeout=30)
    assert cond.description == "No route to the destination node", cond

    b.start()
    wait_statuses(mesh["C"], keys, ["active"], timeout=ACTIVATE_TIMEOUT)
    _routable(mesh, net, "/queue/lr-restart", timeout=30)
    again = net.connect(mesh["A"].url).sender("/queue/lr-restart")
    outcomes = send_and_settle(net, again, [msg("routed-after")], timeout=30)
    assert [o.name for o in outcomes] == ["accepted"]
    producer = net.connect(mesh["A"].url)
    outcomes = send_and_settle(net, producer.sender(ADDR), [msg("after")], timeout=30)
    assert [o.name for o in outcomes] == ["accepted"]
    rcv = net.connect(mesh["A"].url).receiver(ADDR)
    net.wait(lambda: rcv.bodies() == ["after"], 30, "the message back through the restarted broker")


def _burst(net: Net, snd: Any, sent: List[str]) -> Callable[[int], None]:
    """Send ``count`` numbered messages on ``snd`` (their bodies appended to ``sent``)."""
    def burst(count: int) -> None:
        for _ in range(count):
            sent.append(f"m{len(sent)}")
            snd.send(msg(sent[-1]))
        net.pump(0.2)
    return burst


def test_sharded_queue_across_the_mesh_and_a_shard_added_with_qdmanage(
        line_factory: LineFactory, broker: RabbitBroker, broker2: RabbitBroker, net: Net,
        queue_name: str) -> None:
    """One shard behind A, producers and consumers on B; a second shard is added behind C
    with qdmanage while traffic flows: later messages spread over both shards (balanced
    across the mesh), and a consumer on B drains both."""
    external = f"/queue/{queue_name}"
    mesh = line_factory({"A": connector("shard1", broker) + WAYPOINT + queue_links(ADDR, external, "shard1"),
                         "B": WAYPOINT, "C": WAYPOINT})
    wait_statuses(mesh["A"], [(ADDR, "in", "shard1"), (ADDR, "out", "shard1")], ["active"],
                  timeout=ACTIVATE_TIMEOUT)
    wait_for(lambda: ((row := _remote_phase(mesh, "B", "0")) is not None and int(row["remote"]) == 1, row),
             20, "B to see the first shard (on A)")
    snd = net.connect(mesh["B"].url).sender(ADDR)
    sent: List[str] = []
    burst = _burst(net, snd, sent)

    burst(20)
    net.call(lambda: qdmanage(mesh["C"], "create", "--type", "connector", "name=shard2",
                              "host=127.0.0.1", f"port={broker2.port}", "role=route-container",
                              "saslMechanisms=ANONYMOUS"))
    for direction in ("in", "out"):
        net.call(lambda d=direction: qdmanage(
            mesh["C"], "create", "--type", "autoLink", f"address={ADDR}", f"direction={d}",
            "connection=shard2", f"externalAddress={external}"))
        burst(5)
    net.call(lambda: wait_statuses(mesh["C"], [(ADDR, "in", "shard2"), (ADDR, "out", "shard2")],
                                   ["active"], timeout=ACTIVATE_TIMEOUT))
    wait_for(lambda: (burst(2) is None and (row := _remote_phase(mesh, "B", "0")) is not None
                      and int(row["remote"]) == 2, row), 20, "B to see both shards")
    before = net.call(lambda: [broker.queue_depth(queue_name) or 0, broker2.queue_depth(queue_name) or 0])
    burst(40)
    net.wait(snd.all_settled, 30, "outcomes for everything sent")
    assert set(snd.outcome_counts()) == {"accepted"}, snd.outcome_counts()
    depths = net.call(lambda: wait_for(lambda: (sum(d := [broker.queue_depth(queue_name) or 0,
                                                          broker2.queue_depth(queue_name) or 0])
                                                == len(sent), d),
                                       30, f"all {len(sent)} messages on the two shards"))
    assert depths[0] > before[0] and depths[1] > before[1], \
        f"the last 40 did not spread over both shards: {before} -> {depths}"

    rcv = net.connect(mesh["B"].url).receiver(ADDR)
    net.wait(lambda: len(rcv.received) >= len(sent), 40, f"all {len(sent)} messages at the consumer on B")
    net.pump(0.5)
    assert sorted(rcv.bodies()) == sorted(sent), "lost or duplicated messages"


def test_shard_removed_with_qdmanage_while_traffic_flows(
        line_factory: LineFactory, broker: RabbitBroker, broker2: RabbitBroker, net: Net,
        queue_name: str) -> None:
    """Two shards, behind A and behind C, producer on B. C's shard is removed at run time
    (qdmanage delete of its auto-links, then of its connector) while B keeps sending: B stops
    seeing C's phase-0 destination, later messages all go to A's shard, nothing is lost
    silently (every message is accepted into a shard or released back to the producer), and
    messages left on the removed shard no longer reach consumers."""
    external = f"/queue/{queue_name}"

    def shard(name: str, b: RabbitBroker) -> str:
        return connector(name, b) + WAYPOINT + queue_links(ADDR, external, name)

    mesh = line_factory({"A": shard("shard1", broker), "B": WAYPOINT, "C": shard("shard2", broker2)})
    wait_statuses(mesh["A"], [(ADDR, "in", "shard1"), (ADDR, "out", "shard1")], ["active"],
                  timeout=ACTIVATE_TIMEOUT)
    wait_statuses(mesh["C"], [(ADDR, "in", "shard2"), (ADDR, "out", "shard2")], ["active"],
                  timeout=ACTIVATE_TIMEOUT)
    wait_for(lambda: ((row := _remote_phase(mesh, "B", "0")) is not None and int(row["remote"]) == 2, row),
             20, "B to see both shards")
    snd = net.connect(mesh["B"].url).sender(ADDR)
    sent: List[str] = []
    burst = _burst(net, snd, sent)

    burst(20)
    for row in net.call(lambda: autolinks(mesh["C"])):
        net.call(lambda r=row: qdmanage(mesh["C"], "delete", "--type", "autoLink", "--identity",
                                        str(r["identity"])))
        burst(5)
    net.call(lambda: qdmanage(mesh["C"], "delete", "--type", "connector", "--name", "shard2"))
    assert net.call(lambda: autolinks(mesh["C"])) == []
    wait_for(lambda: (burst(2) is None and (row := _remote_phase(mesh, "B", "0")) is not None
                      and int(row["remote"]) == 1, row), 20, "B to see only the shard behind A")
    net.wait(snd.all_settled, 30, "outcomes for everything sent so far")
    before = net.call(lambda: [broker.queue_depth(queue_name) or 0, broker2.queue_depth(queue_name) or 0])
    first = len(sent)
    burst(30)
    net.wait(snd.all_settled, 30, "outcomes for everything sent")
    counts = snd.outcome_counts()
    assert set(counts) <= {"accepted", "released"}, counts
    assert all(snd.outcomes[t].name == "accepted" for t in snd.tags[first:]), \
        "a message sent after the removal was not accepted by the remaining shard"
    depths = net.call(lambda: wait_for(lambda: ((d := [broker.queue_depth(queue_name) or 0,
                                                       broker2.queue_depth(queue_name) or 0])[0]
                                                == before[0] + 30, d),
                                       30, "the last 30 on the shard behind A"))
    assert depths[1] == before[1], f"the removed shard still got messages: {before} -> {depths}"
    assert sum(depths) == counts["accepted"], f"accepted {counts['accepted']}, queued {depths}"

    broker2.send(external, ["left-on-removed-shard"])
    rcv = net.connect(mesh["B"].url).receiver(ADDR)
    net.wait(lambda: len(rcv.received) >= depths[0], 40, f"the {depths[0]} messages of A's shard at B")
    net.pump(1.0)
    assert len(rcv.received) == depths[0] and "left-on-removed-shard" not in rcv.bodies(), rcv.bodies()
    assert (broker2.queue_depth(queue_name) or 0) == depths[1] + 1
