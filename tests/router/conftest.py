"""Fixtures for router integration tests: a real router subprocess and AMQP clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, List

import pytest

from .amqpclient import Net
from .routerproc import Router, RouterFactory


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    # A broken router must fail a test, never hang the run: cap every router test.
    for item in items:
        if "tests/router" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(60))


@pytest.fixture
def router_factory(tmp_path: Path) -> Iterator[RouterFactory]:
    """Start routers with custom config; each is SIGTERMed at teardown and must exit 0."""
    started: List[Router] = []

    def make(**kwargs: Any) -> Router:
        workdir = tmp_path / f"r{len(started)}"
        workdir.mkdir()
        r = Router(workdir, **kwargs)
        started.append(r)
        return r.start()

    yield make
    errors = []
    for r in started:
        try:
            r.stop(check=True)
        except AssertionError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)


@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    """A standalone router: prefixes multicast/closest/balanced, default distribution otherwise."""
    return router_factory()


@pytest.fixture
def net() -> Iterator[Net]:
    """The client event loop; all connections are closed at teardown."""
    n = Net()
    yield n
    n.close()
