"""Messages for a consumer without credit wait unread in their producer's link
(amqp/data_path/waiting_producers.py). Whatever happens meanwhile (the producer leaves, the consumer
leaves, several producers wait, messages span many frames), nothing is lost, reordered,
or hidden from management."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.management.mgmt import MgmtClient

from .amqpclient import (
    ACCEPTED,
    MODIFIED,
    RELEASED,
    Net,
    ReceiverLink,
    SenderLink,
    message_of_size,
    msg,
)
from .routerproc import Router
from .test_robustness import _read_line

CRASH_SENDER = Path(__file__).with_name("crash_sender.py")


def fill(net: Net, snd: SenderLink, rcv: ReceiverLink, count: int) -> None:
    """Sends ``count`` messages (bodies 0, 1, ...); returns once ``rcv`` has used up its credit
    on the first of them and the others wait."""
    net.wait(lambda: snd.credit > 0, 10, "sender credit")
    for i in range(count):
        snd.send(msg(i))
    net.wait(lambda: len(rcv.received) > 0 and rcv.credit == 0, 10, "the consumer's credit used up")
    net.pump(0.3)


def test_presettled_messages_of_a_producer_that_left_are_still_delivered(router: Router, net: Net) -> None:
    """A producer sends pre-settled messages to a consumer without credit and closes its
    connection at once: the messages were waiting in its link, and still arrive, in order,
    once the consumer grants credit."""
    rcv = net.connect(router.url).receiver("waiting.gone", credit=2, refill=False)
    producer = net.connect(router.url)
    fill(net, producer.sender("waiting.gone", presettled=True), rcv, 20)
    producer.close()
    net.pump(0.3)
    assert rcv.bodies() == [0, 1]
    rcv.flow(100)
    net.wait(lambda: len(rcv.received) == 20, 10, "the 18 that waited")
    assert rcv.bodies() == list(range(20))


def test_a_producer_detaching_its_link_loses_nothing_and_its_connection_carries_on(
        router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("waiting.detach", credit=1, refill=False)
    producer = net.connect(router.url)
    snd = producer.sender("waiting.detach")
    fill(net, snd, rcv, 8)
    snd.close()
    net.wait(lambda: snd.remote_closed, 10, "the router's detach")
    again = producer.sender("waiting.detach")
    net.wait(lambda: again.credit > 0, 10, "credit on a new link of the same connection")
    tag = again.send(msg("after"))
    rcv.flow(20)
    net.wait(lambda: tag in again.outcomes, 10, "the new link's message accepted")
    assert again.outcomes[tag].state == ACCEPTED
    assert rcv.bodies() == [*range(8), "after"]
    assert producer.alive


def test_presettled_messages_of_a_producer_that_crashed_are_still_delivered(router: Router, net: Net) -> None:
    """The same when the producer's process dies (no AMQP close, no detach)."""
    rcv = net.connect(router.url).receiver("waiting.crash", credit=1, refill=False)
    proc = subprocess.Popen([sys.executable, str(CRASH_SENDER), router.url, "waiting.crash", "12"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert _read_line(proc.stdout, net, 20, proc) == "READY"
        net.wait(lambda: len(rcv.received) == 1, 10, "the first message")
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    net.pump(0.5)
    rcv.flow(20)
    net.wait(lambda: len(rcv.received) == 12, 10, "the 11 that waited")
    assert rcv.bodies() == list(range(12))
    assert router.is_running()


def test_waiting_messages_are_released_when_their_consumer_leaves(router: Router, net: Net) -> None:
    """The consumer takes 3 and settles none, 7 wait for it; it leaves: the 3 it saw come
    back modified, the 7 it never saw released. Every message has an outcome."""
    consumer = net.connect(router.url)
    rcv = consumer.receiver("waiting.leaves", credit=3, refill=False, settle=None)
    snd = net.connect(router.url).sender("waiting.leaves")
    net.wait(lambda: snd.credit > 0, 10, "sender credit")
    tags = [snd.send(msg(i)) for i in range(10)]
    net.wait(lambda: len(rcv.received) == 3, 10, "3 messages")
    net.pump(0.3)
    assert not snd.outcomes, "no outcome while the consumer holds or waits for them"
    consumer.close()
    net.wait(lambda: all(tag in snd.outcomes for tag in tags), 10, "an outcome for each message")
    assert [snd.outcomes[tag].state for tag in tags] == [MODIFIED] * 3 + [RELEASED] * 7


def test_management_counts_waiting_messages_as_undelivered(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("waiting.counted", credit=1, refill=False)
    snd = net.connect(router.url).sender("waiting.counted")
    net.wait(lambda: snd.credit > 0, 10, "sender credit")
    tags = [snd.send(msg(i)) for i in range(6)]
    net.wait(lambda: len(rcv.received) == 1, 10, "the first message")
    net.pump(0.3)
    mgmt = MgmtClient(net, net.connect(router.url))
    rows = mgmt.query("org.apache.qpid.dispatch.router.link",
                      ["linkDir", "owningAddr", "undeliveredCount"])
    consumer_rows = [row for row in rows if row["linkDir"] == "out"
                     and (row["owningAddr"] or "").endswith("waiting.counted")]
    assert [row["undeliveredCount"] for row in consumer_rows] == [5]
    rcv.flow(10)
    net.wait(lambda: all(tag in snd.outcomes for tag in tags), 10, "every outcome")
    assert {snd.outcomes[tag].state for tag in tags} == {ACCEPTED}
    assert rcv.bodies() == list(range(6))


@pytest.mark.differs_from_c("qdrouterd reads each producer's window into the consumer's outgoing queue "
                             "in arrival order, so the first producer's 100 go out first; qdmesh leaves "
                             "waiting messages in their senders' links and takes turns between them")
def test_two_waiting_producers_take_turns(router: Router, net: Net) -> None:
    """Two producers fill their windows while the consumer has no credit; it then grants
    credit ten at a time. Both get through early (neither starves the other), each in its
    own order, and nothing is lost."""
    rcv = net.connect(router.url).receiver("waiting.turns", credit=1, refill=False)
    senders = [net.connect(router.url).sender("waiting.turns") for _ in range(2)]
    net.wait(lambda: all(snd.credit > 0 for snd in senders), 10, "sender credit")
    for name, snd in zip("ab", senders):
        for i in range(100):
            snd.send(msg(f"{name}{i}"))
    net.wait(lambda: len(rcv.received) == 1, 10, "the first message")
    net.pump(0.5)
    while len(rcv.received) < 200:
        expected = min(len(rcv.received) + 10, 200)
        rcv.flow(10)
        net.wait(lambda expected=expected: len(rcv.received) >= expected, 10, f"{expected} messages")
    bodies = rcv.bodies()
    first = bodies[:60]
    assert any(b.startswith("a") for b in first) and any(b.startswith("b") for b in first), first
    for name in "ab":
        assert [b for b in bodies if b.startswith(name)] == [f"{name}{i}" for i in range(100)]


def test_large_messages_wait_and_arrive_whole(router: Router, net: Net) -> None:
    """Messages of many frames that wait are read only once complete, and arrive intact."""
    rcv = net.connect(router.url).receiver("waiting.large", credit=1, refill=False)
    snd = net.connect(router.url).sender("waiting.large")
    net.wait(lambda: snd.credit > 0, 10, "sender credit")
    sent = [message_of_size(300_000 + i, "waiting.large") for i in range(5)]
    tags = [snd.send(m) for m in sent]
    net.wait(lambda: len(rcv.received) == 1, 10, "the first message")
    net.pump(0.5)
    rcv.flow(10)
    net.wait(lambda: all(tag in snd.outcomes for tag in tags), 20, "every outcome")
    assert {snd.outcomes[tag].state for tag in tags} == {ACCEPTED}
    assert rcv.bodies() == [m.body for m in sent]

