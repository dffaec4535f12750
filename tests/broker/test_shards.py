"""A queue sharded over two RabbitMQ brokers (Qpid Dispatch 0.7 book, 2.5.2), and a shard added at
run time with qdmanage while traffic flows (2.5.3)."""

from __future__ import annotations

from typing import List

from tests.router.amqpclient import Net, msg, send_and_settle

from .rabbit import RabbitBroker
from .waypoint import connector_status, qdmanage, queue_links, wait_for, wait_statuses, waypoint_router

ADDR = "queue.first"
SHARD1 = [(ADDR, "in", "broker1"), (ADDR, "out", "broker1")]
SHARD2 = [(ADDR, "in", "broker2"), (ADDR, "out", "broker2")]


def _send(net: Net, url: str, bodies: List[str]) -> None:
    producer = net.connect(url)
    snd = producer.sender(ADDR)
    outcomes = send_and_settle(net, snd, [msg(b) for b in bodies], timeout=30)
    assert [o.name for o in outcomes] == ["accepted"] * len(bodies)
    producer.close()


def _depths(brokers: List[RabbitBroker], queue: str) -> List[int]:
    return [b.queue_depth(queue) or 0 for b in brokers]


def test_sharded_queue_balances_and_consumer_drains_both(  # type: ignore[no-untyped-def]
        broker: RabbitBroker, broker2: RabbitBroker, router_factory, net: Net, queue_name: str) -> None:
    external = f"/queue/{queue_name}"
    router = waypoint_router(router_factory, {"broker1": broker, "broker2": broker2},
                             queue_links(ADDR, external, "broker1") + queue_links(ADDR, external, "broker2"))
    wait_statuses(router, SHARD1 + SHARD2, ["active"])

    n = 40
    _send(net, router.url, [f"p{i}" for i in range(n)])
    depths = wait_for(lambda: (sum(d := _depths([broker, broker2], queue_name)) == n, d), 15,
                      f"{n} messages queued over the two shards")
    assert min(depths) >= n // 5, f"producer's messages not balanced over the shards: {depths}"

    # Messages put straight onto each shard come out of the router too.
    broker.send(external, ["only-on-1"])
    broker2.send(external, ["only-on-2"])
    consumer = net.connect(router.url)
    rcv = consumer.receiver(ADDR)
    net.wait(lambda: len(rcv.received) >= n + 2, 30, f"{n + 2} messages from both shards")
    net.pump(0.5)
    assert sorted(rcv.bodies()) == sorted([f"p{i}" for i in range(n)] + ["only-on-1", "only-on-2"])
    consumer.close()
    wait_for(lambda: (_depths([broker, broker2], queue_name) == [0, 0], None), 10, "both shards empty")


def test_adding_a_shard_with_qdmanage_while_traffic_flows(  # type: ignore[no-untyped-def]
        broker: RabbitBroker, broker2: RabbitBroker, router_factory, net: Net, queue_name: str) -> None:
    external = f"/queue/{queue_name}"
    router = waypoint_router(router_factory, {"broker1": broker}, queue_links(ADDR, external, "broker1"))
    wait_statuses(router, SHARD1, ["active"])

    # Traffic flows (a producer sending in bursts) while the shard is added; nobody consumes
    # until the end, so every message waits in one of the two broker queues.
    producer = net.connect(router.url)
    snd = producer.sender(ADDR)
    sent: List[str] = []

    def burst(count: int) -> None:
        for _ in range(count):
            body = f"m{len(sent)}"
            sent.append(body)
            snd.send(msg(body))
        net.pump(0.2)

    burst(20)
    # Qpid Dispatch 0.7 book, 2.5.3, with its long type names and 0.7 attribute names.
    qdmanage(router, "create", "--type", "org.apache.qpid.dispatch.connector", "name=broker2",
             "host=127.0.0.1", f"port={broker2.port}", "role=route-container", "saslMechanisms=ANONYMOUS")
    burst(10)
    for direction in ("in", "out"):
        qdmanage(router, "create", "--type", "org.apache.qpid.dispatch.router.config.autoLink",
                 f"addr={ADDR}", f"dir={direction}", "connection=broker2", f"externalAddr={external}")
        burst(10)

    def shard2_active() -> tuple:
        burst(5)
        rows = {(a.get("address", a.get("addr")), a.get("direction", a.get("dir")), a.get("connection")):
                a.get("operStatus") for a in qdmanage(router, "query", "--type", "autoLink")}
        return all(rows.get(k) == "active" for k in SHARD2), rows

    wait_for(shard2_active, 45, "the new shard's auto-links to be active")
    assert connector_status(router, "broker2")[0] == "Operational"
    before = _depths([broker, broker2], queue_name)
    burst(40)
    net.wait(lambda: snd.all_settled(), 30, "outcomes for everything sent")
    assert set(snd.outcome_counts()) == {"accepted"}, snd.outcome_counts()
    depths = wait_for(lambda: (sum(d := _depths([broker, broker2], queue_name)) == len(sent), d), 15,
                      f"all {len(sent)} messages queued on the two shards")
    assert depths[1] - before[1] > 0, f"the last 40 messages all skipped the new shard: {before} -> {depths}"
    assert depths[0] - before[0] > 0, f"the first shard got none of the last 40: {before} -> {depths}"

    # A consumer gets everything, from both shards.
    consumer = net.connect(router.url)
    rcv = consumer.receiver(ADDR)
    net.wait(lambda: len(rcv.received) >= len(sent), 30, f"all {len(sent)} messages at the consumer")
    net.pump(0.5)
    got = rcv.bodies()
    assert sorted(got) == sorted(sent), \
        f"lost: {set(sent) - set(got)}; duplicated: {len(got) - len(set(got))}"
    producer.close()
    consumer.close()
