"""The RabbitMQ fixture on its own: a real broker, spoken to directly with python-qpid-proton."""

from __future__ import annotations

from proton import Condition
from proton.handlers import MessagingHandler
from proton.reactor import Container

from .conftest import BrokerFactory
from .rabbit import RabbitBroker


def test_send_and_receive_through_a_queue(broker: RabbitBroker, queue_name: str) -> None:
    assert broker.start_seconds, "broker was never started"
    assert broker.container_id, "broker sent no container-id"
    broker.send(f"/queue/{queue_name}", [f"m{i}" for i in range(5)])
    assert broker.queue_depth(queue_name) == 5
    assert broker.drain(f"/queue/{queue_name}") == [f"m{i}" for i in range(5)]
    assert broker.queue_depth(queue_name) == 0


def test_two_brokers_are_independent(broker: RabbitBroker, broker2: RabbitBroker, queue_name: str) -> None:
    assert broker.port != broker2.port and broker.container_id != broker2.container_id
    broker.send(f"/queue/{queue_name}", ["one"])
    broker2.send(f"/queue/{queue_name}", ["two", "three"])
    assert broker2.drain(f"/queue/{queue_name}") == ["two", "three"]
    assert broker.drain(f"/queue/{queue_name}") == ["one"]


class _Attach(MessagingHandler):
    """Attach one receiver and record how the broker answers (link or session error)."""

    def __init__(self, url: str, address: str) -> None:
        super().__init__()
        self.url, self.address = url, address
        self.opened = False
        self.error: Condition | None = None

    def on_start(self, event) -> None:  # type: ignore[no-untyped-def]
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        event.container.create_receiver(self.conn, self.address)
        event.container.schedule(3, self)

    def on_link_opened(self, event) -> None:  # type: ignore[no-untyped-def]
        self.opened = True

    def on_link_error(self, event) -> None:  # type: ignore[no-untyped-def]
        self.error = event.link.remote_condition
        self.conn.close()

    def on_session_error(self, event) -> None:  # type: ignore[no-untyped-def]
        self.error = event.session.remote_condition
        self.conn.close()

    def on_timer_task(self, event) -> None:  # type: ignore[no-untyped-def]
        self.conn.close()


def test_missing_queue_is_refused_only_under_amq_queue(broker: RabbitBroker, queue_name: str) -> None:
    refused = _Attach(broker.url, f"/amq/queue/{queue_name}-absent")
    Container(refused).run()
    assert refused.error is not None and refused.error.name == "amqp:not-found", refused.error
    assert "NOT_FOUND" in (refused.error.description or "")
    declared = _Attach(broker.url, f"/queue/{queue_name}-declared")
    Container(declared).run()
    assert declared.opened and declared.error is None
    assert broker.queue_depth(f"{queue_name}-declared") == 0


def test_stop_restart_and_shutdown_leave_nothing_running(broker_factory: BrokerFactory) -> None:
    b = broker_factory()
    b.start()
    b.send("/queue/restart", ["before"])
    b.stop()
    assert not b.is_running()
    b.start()   # same port and node name; queues from /queue/ are not durable
    assert b.drain("/queue/restart") == []
    b.shutdown()
    assert b.leftover_processes() == []
    print(f"broker start times: {[round(s, 1) for s in b.start_seconds]} s")
