"""Fixtures for tests against a real RabbitMQ broker: brokers, routers connected to them, clients.

Brokers are slow to start (an Erlang node: ~8-9 s here), so two are shared by the whole
session (``broker``, ``broker2``; tests use queue names of their own); a test that stops and
restarts a broker makes its own with ``broker_factory``. Without rabbitmq-server installed
every test here is skipped with the reason (CI installs it with .ci/setup.d/10-rabbitmq.sh).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

from tests.prerequisites import require
from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)

from .rabbit import RabbitBroker, missing_reason

BrokerFactory = Callable[[], RabbitBroker]


def _require_rabbitmq() -> None:
    reason = missing_reason()
    require(not reason, reason or "")


def _shutdown_all(brokers: List[RabbitBroker]) -> None:
    left = []
    for b in brokers:
        b.shutdown()
        left += b.leftover_processes()
    assert not left, f"broker processes left running: {left}"


@pytest.fixture(scope="session")
def _session_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[List[RabbitBroker]]:
    brokers: List[RabbitBroker] = []
    yield brokers
    _shutdown_all(brokers)


def _session_broker(brokers: List[RabbitBroker], index: int, tmp: pytest.TempPathFactory) -> RabbitBroker:
    _require_rabbitmq()
    while len(brokers) <= index:
        brokers.append(RabbitBroker(tmp.mktemp(f"rabbit{len(brokers)}")))
    b = brokers[index]
    if not b.is_running():
        b.start()
    return b


@pytest.fixture
def broker(_session_brokers: List[RabbitBroker], tmp_path_factory: pytest.TempPathFactory) -> RabbitBroker:
    """The session's first broker (started on first use; restarted if a test stopped it)."""
    return _session_broker(_session_brokers, 0, tmp_path_factory)


@pytest.fixture
def broker2(_session_brokers: List[RabbitBroker], tmp_path_factory: pytest.TempPathFactory) -> RabbitBroker:
    """A second, independent broker (shards)."""
    return _session_broker(_session_brokers, 1, tmp_path_factory)


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """Brokers of the test's own, NOT started; all shut down at teardown."""
    _require_rabbitmq()
    made: List[RabbitBroker] = []

    def make() -> RabbitBroker:
        b = RabbitBroker(tmp_path / f"rabbit{len(made)}")
        made.append(b)
        return b

    yield make
    _shutdown_all(made)


@pytest.fixture
def queue_name(request: pytest.FixtureRequest) -> str:
    """A queue name unique to the test (brokers are shared by the session)."""
    return "q-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")[:60]


