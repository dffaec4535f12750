"""Fixtures for router integration tests: a real router subprocess and AMQP clients."""

from __future__ import annotations

from typing import List

import pytest

from .fixtures import net, router_factory  # noqa: F401 (shared fixtures)
from .routerproc import Router, RouterFactory


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    # A broken router must fail a test, never hang the run: cap every router test.
    for item in items:
        if "tests/router" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(60))




@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    """A standalone router: prefixes multicast/closest/balanced, default distribution otherwise."""
    return router_factory()


