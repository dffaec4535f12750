"""The broker-federation use cases done with a qdmesh (docs/federation.md): the configs in
docs/federation/ on a line of routers A - B - C, a source RabbitMQ behind A and a
destination RabbitMQ behind C."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

from proton import Message

from tests.mesh.conftest import mesh_factory as mesh_factory  # fixture line_factory uses
from tests.mesh.meshproc import Mesh
from tests.mesh_linkroute.conftest import LineFactory
from tests.mesh_linkroute.conftest import line_factory as line_factory  # the fixture
from tests.mesh_linkroute.routable import wait_routable
from tests.router.amqpclient import Net, msg, send_and_settle

from .rabbit import RabbitBroker
from .waypoint import wait_for, wait_statuses

CONFIGS = Path(__file__).resolve().parents[2] / "docs" / "federation"


def federation_config(name: str, ports: Dict[str, int]) -> str:
    text = (CONFIGS / name).read_text()
    for key, port in ports.items():
        text = text.replace(f"@{key}@", str(port))
    assert "@" not in text, f"{name}: placeholder left"
    return text


def _mesh(line_factory: LineFactory, route: str, src: RabbitBroker, dest: RabbitBroker) -> Mesh:
    ports = {"SRC_PORT": src.port, "DEST_PORT": dest.port}
    mesh = line_factory({"A": federation_config(f"{route}.A.conf", ports),
                         "C": federation_config(f"{route}.C.conf", ports)})
    return mesh


def test_queue_route(line_factory: LineFactory, broker: RabbitBroker, broker2: RabbitBroker,
                     net: Net) -> None:
    """qpid-route queue add DEST SRC amq.fanout public: what is put in the source broker's
    queue 'public' reaches the destination broker's amq.fanout (and its bound queues)."""
    src, dest = broker, broker2
    mesh = _mesh(line_factory, "queue-route", src, dest)
    wait_statuses(mesh["A"], [("fed.public", "in", "src-broker")], ["active"])
    wait_statuses(mesh["C"], [("fed.public", "out", "dest-broker")], ["active"])
    # A subscriber bound to the destination's fanout exchange (RabbitMQ makes the queue).
    subscriber = net.connect(f"amqp://127.0.0.1:{dest.port}").receiver("/exchange/amq.fanout", credit=20)
    publisher = net.connect(f"amqp://127.0.0.1:{src.port}").sender("/queue/public")
    outcomes = send_and_settle(net, publisher, [msg(f"q{i}") for i in range(5)], timeout=20)
    assert [o.name for o in outcomes] == ["accepted"] * 5
    net.wait(lambda: len(subscriber.received) == 5, 30, "five messages through the queue route")
    assert sorted(subscriber.bodies()) == [f"q{i}" for i in range(5)]
    assert (src.queue_depth("public") or 0) == 0, "the route drains the source queue"


def test_exchange_route(line_factory: LineFactory, broker: RabbitBroker, broker2: RabbitBroker,
                        net: Net) -> None:
    """qpid-route route add DEST SRC amq.topic global.#: messages matching global.# on the
    source's amq.topic reach the destination's amq.topic with their routing key; others stay."""
    src, dest = broker, broker2
    mesh = _mesh(line_factory, "exchange-route", src, dest)
    wait_statuses(mesh["A"], [("fed.global", "in", "src-broker")], ["active"])
    wait_statuses(mesh["C"], [("fed.global", "out", "dest-broker")], ["active"])
    subscriber = net.connect(f"amqp://127.0.0.1:{dest.port}").receiver("/exchange/amq.topic/global.#",
                                                                        credit=20)
    publisher = net.connect(f"amqp://127.0.0.1:{src.port}").sender("/exchange/amq.topic")
    messages = [Message(body=f"g{i}", subject=f"global.news.{i}") for i in range(3)]
    messages.append(Message(body="local", subject="local.news"))
    send_and_settle(net, publisher, messages, timeout=20)
    net.wait(lambda: len(subscriber.received) == 3, 30, "the three global.# messages at the destination")
    net.pump(1.0)
    assert sorted(subscriber.bodies()) == ["g0", "g1", "g2"], "only global.# crosses"
    subjects = sorted(str(r.message.subject) for r in subscriber.received)
    assert subjects == [f"global.news.{i}" for i in range(3)], "routing keys are kept"


def test_link_route_to_the_brokers_queues_and_exchanges(line_factory: LineFactory, broker: RabbitBroker,
                                                        net: Net, queue_name: str) -> None:
    """docs/federation/link-route.C.conf: from router A, two hops from the broker behind C, a
    sender fills a broker queue (the broker's outcomes come back), and a receiver on
    /exchange/amq.topic/dyn.# gets what is published to the broker's amq.topic with a
    matching key, and nothing else (the dynamic route's job)."""
    mesh = line_factory({"C": federation_config("link-route.C.conf", {"DEST_PORT": broker.port})})
    queue = f"/queue/{queue_name}"
    wait_routable(mesh, net, "A", queue)
    wait_routable(mesh, net, "A", "/exchange/amq.topic/probe", receiving=True)

    outcomes = send_and_settle(net, net.connect(mesh["A"].url).sender(queue),
                               [msg(f"lr{i}") for i in range(3)], timeout=20)
    assert [o.name for o in outcomes] == ["accepted"] * 3
    wait_for(lambda: (broker.queue_depth(queue_name) == 3, broker.queue_depth(queue_name)), 10,
             "three messages in the broker queue")

    subscriber = net.connect(mesh["A"].url).receiver("/exchange/amq.topic/dyn.#", credit=20)
    assert subscriber.remote_opened and not subscriber.remote_closed, subscriber.remote_condition
    publisher = net.connect(f"amqp://127.0.0.1:{broker.port}").sender("/exchange/amq.topic")
    send_and_settle(net, publisher, [Message(body="d1", subject="dyn.one"),
                                     Message(body="other", subject="other.one"),
                                     Message(body="d2", subject="dyn.two")], timeout=20)
    net.wait(lambda: len(subscriber.received) == 2, 30, "the two dyn.# messages at A")
    net.pump(1.0)
    assert subscriber.bodies() == ["d1", "d2"], "only matching keys reach the subscriber"
