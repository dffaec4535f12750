"""Link routes to a real RabbitMQ broker (tests/broker's fixture): the book's b2 example, a
client's credit and drain against a broker queue, and the broker's own errors passed through.
Skipped (with the reason) where rabbitmq-server is not installed."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tests.broker.rabbit import RabbitBroker, missing_reason
from tests.prerequisites import require
from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle
from tests.router.routerproc import Router

from .conftest import EdgeFactory
from .lrutil import both_ways

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def rabbit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RabbitBroker]:
    reason = missing_reason()
    require(not reason, reason or "")
    b = RabbitBroker(Path(tmp_path_factory.mktemp("lr-rabbit")))
    b.start()
    yield b
    b.shutdown()
    assert not b.leftover_processes(), b.leftover_processes()


@pytest.fixture
def b2(edge_factory: EdgeFactory, rabbit: RabbitBroker) -> Router:
    """Qpid Dispatch 0.7 book, 2.4.1: prefix b2 both ways to connector 'broker'; b2.NAME is the
    broker's /queue/NAME."""
    return edge_factory(both_ways("b2", connection="broker", delete="b2.", add="/queue/"),
                        {"broker": rabbit.port}, active=2)


def _queue() -> str:
    return "lrq-" + uuid.uuid4().hex[:8]


@pytest.mark.c_router_bug("qdrouterd 1.19 aborts (engine.c:1948: pn_link_flow: Assertion "
                          "pn_link_is_receiver(receiver) failed) when a client attaches through a link route"
                          " to a RabbitMQ queue")
def test_queue_through_link_routes(b2: Router, net: Net) -> None:
    q = _queue()
    client = net.connect(b2.url)
    outcomes = send_and_settle(net, client.sender(f"b2.{q}"), [msg(f"m{i}") for i in range(5)], timeout=20)
    assert [o.state for o in outcomes] == [ACCEPTED] * 5, [o.name for o in outcomes]
    rcv = client.receiver(f"b2.{q}", credit=2, refill=False)
    assert rcv.remote_opened and not rcv.remote_closed, rcv.remote_condition
    net.wait(lambda: len(rcv.received) == 2, 20, "2 messages from the queue")
    net.pump(1.0)
    assert rcv.bodies() == ["m0", "m1"], "the broker sent more than the client's credit"
    # (no drain here: RabbitMQ 3.x's AMQP 1.0 plugin does not answer drain properly even to a
    # direct client; drain is covered against a router container in test_routed_receiver.py)
    rcv.flow(10)
    net.wait(lambda: len(rcv.received) == 5, 20, "the other 3 after more credit")
    assert rcv.bodies() == [f"m{i}" for i in range(5)]


@pytest.mark.c_router_bug("qdrouterd 1.19 aborts (engine.c:1948: pn_link_flow: Assertion "
                          "pn_link_is_receiver(receiver) failed) when a client attaches through a link route"
                          " to a RabbitMQ queue")
def test_direct_queue_address(edge_factory: EdgeFactory, rabbit: RabbitBroker, net: Net) -> None:
    """A route on the broker's own address syntax (prefix /queue, no rewriting)."""
    edge = edge_factory(both_ways("/queue", connection="broker"), {"broker": rabbit.port}, active=2)
    q = f"/queue/{_queue()}"
    client = net.connect(edge.url)
    rcv = client.receiver(q, settle=None)
    snd = client.sender(q)
    tags = [snd.send(msg(i)) for i in range(2)]
    net.wait(lambda: len(rcv.received) == 2, 20, "2 messages back from the broker")
    assert snd.outcomes == {} or all(o.state == ACCEPTED for o in snd.outcomes.values())
    rcv.settle_unsettled(ACCEPTED)
    net.wait(lambda: all(t in snd.outcomes for t in tags), 20, "the broker's outcomes")
    assert rabbit.is_running()


@pytest.mark.c_router_bug("when RabbitMQ ends the session of a routed receiver with amqp:not-found, "
                          "qdrouterd leaves the client's link attached (no detach within 15 s): the client "
                          "hangs")
def test_broker_error_reaches_client_and_route_keeps_working(edge_factory: EdgeFactory, rabbit: RabbitBroker,
                                                             net: Net) -> None:
    """RabbitMQ refuses a receiver on a queue that does not exist (/amq/queue/NAME) by ending the
    session with amqp:not-found. The client's link must be detached with an error (no hang), and
    later routed attaches to the same broker must still work."""
    routes = (both_ways("amq", connection="broker", delete="amq.", add="/amq/queue/")
              + both_ways("b2", connection="broker", delete="b2.", add="/queue/"))
    edge = edge_factory(routes, {"broker": rabbit.port}, active=4)
    client = net.connect(edge.url)
    bad = client.receiver(f"amq.{_queue()}-missing", wait=False)
    net.wait(lambda: bad.remote_closed, 15, "the client's link to be detached after the broker's refusal")
    assert bad.remote_condition is not None, "detached without the broker's error"
    assert client.alive

    q = _queue()
    snd = client.sender(f"b2.{q}")
    assert snd.remote_opened and not snd.remote_closed, snd.remote_condition
    outcomes = send_and_settle(net, snd, [msg("after")], timeout=20)
    assert outcomes[0].state == ACCEPTED
    rcv = client.receiver(f"b2.{q}")
    net.wait(lambda: rcv.bodies() == ["after"], 20, "the message back from the broker")
