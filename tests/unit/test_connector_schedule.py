"""The connector's retry schedule over many failures: 2 s, doubling to 64 s, then every 64 s,
and none after an authentication failure (broker-federation.md, resilient connections).

tests/mesh/test_connector_backoff.py measures the first delays (2, 4, 8 s) on a real router;
reaching the 64 s cap that way takes over two minutes per run, so here the connector runs
against a FAKE server: its clock is a list of scheduled callbacks the test fires, and every
dial is refused, as a closed port refuses it."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

from qdrouter.amqp.connections.connection import ListenerSettings
from qdrouter.amqp.connections.connector import FAILED, OPEN_TIMEOUT_S, OPERATIONAL, WAITING, Connector


class FakeTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimers:
    def __init__(self) -> None:
        self.pending: List[Tuple[float, Callable[[], None], FakeTimer]] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer()
        self.pending.append((delay, callback, timer))
        return timer


class FakeConnection:
    def __init__(self, owner: Any) -> None:
        # The connector it was made for (amqp/connections/connection_owner.py).
        self.owner = owner
        self.last_error: str | None = None

    def remote_failover_list(self) -> None:
        return None  # the peer names no failover servers


class FakeServer:
    """Refuses every dial until ``accept`` is set; then hands out FakeConnections."""

    def __init__(self) -> None:
        self.timers = FakeTimers()
        self.dials = 0
        self.accept = False
        self.connections: List[FakeConnection] = []

    def connect(self, host: str, port: int, settings: Any, addresses: Any,
                owner: Any = None) -> FakeConnection:
        self.dials += 1
        if not self.accept:
            raise ConnectionRefusedError(111, "Connection refused")
        connection = FakeConnection(owner)
        self.connections.append(connection)
        return connection


def _retry_delays(server: FakeServer) -> List[float]:
    """Fire the next retry timer (open timeouts are left pending); its delay."""
    retries = [entry for entry in server.timers.pending
               if entry[0] != OPEN_TIMEOUT_S and not entry[2].cancelled]
    assert len(retries) == 1, server.timers.pending
    server.timers.pending.remove(retries[0])
    delay, callback, _ = retries[0]
    callback()
    return [delay]


def _connector(server: FakeServer) -> Connector:
    settings = ListenerSettings(name="to-peer", role="inter-router")
    return Connector(server, "127.0.0.1", 5999, settings)


def test_delays_double_from_2_to_64_then_stay() -> None:
    server = FakeServer()
    connector = _connector(server)
    connector.start()
    delays: List[float] = []
    for _ in range(9):
        assert connector.status == WAITING and "Connection refused" in connector.message
        assert f"retrying in {server.timers.pending[-1][0]:g} s" in connector.message
        delays += _retry_delays(server)
    assert delays == [2, 4, 8, 16, 32, 64, 64, 64, 64]
    assert server.dials == 10


def test_success_resets_the_schedule_and_authentication_failure_ends_it() -> None:
    server = FakeServer()
    connector = _connector(server)
    connector.start()
    delays = _retry_delays(server) + _retry_delays(server) + _retry_delays(server)
    assert delays == [2, 4, 8]
    server.accept = True
    _retry_delays(server)                      # the 16 s wait, then a dial that connects
    connection = server.connections[-1]
    assert connection.owner is connector
    connector.connection_opened(connection)
    assert connector.status == OPERATIONAL
    connection.last_error = "amqp:connection:forced: peer went away"
    connector.connection_closed(connection)
    assert _retry_delays(server) == [2], "an operational connection resets the delay to 2 s"
    connection = server.connections[-1]
    connection.last_error = "amqp:unauthorized-access: Authentication failed [mech=PLAIN]"
    assert connection.owner is connector
    connector.connection_closed(connection)
    assert connector.status == FAILED and "not retrying" in connector.message
    assert all(entry[0] == OPEN_TIMEOUT_S or entry[2].cancelled for entry in server.timers.pending), \
        "no retry may be scheduled after an authentication failure"
