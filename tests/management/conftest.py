"""Fixtures for management-agent tests: a real router subprocess and a management client.

The router process and the AMQP client toolkit are those of tests/router (imported as
``tests.router.*``: the repository root is put on sys.path so that plain ``pytest`` works
as well as ``python -m pytest``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.management.mgmt import MgmtClient  # noqa: E402
from tests.router.amqpclient import Net  # noqa: E402
from tests.router.fixtures import net, router_factory  # noqa: E402,F401 (shared fixtures)
from tests.router.routerproc import Router, RouterFactory  # noqa: E402


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    # A broken agent must fail a test, never hang the run.
    for item in items:
        if "tests/management" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(30))




@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    """A standalone router 'R1' with prefixes multicast/closest/balanced configured."""
    return router_factory()




@pytest.fixture
def mgmt(router: Router, net: Net) -> MgmtClient:
    """A management client on its own connection: sender to $management, dynamic reply-to."""
    return MgmtClient(net, net.connect(router.url))
