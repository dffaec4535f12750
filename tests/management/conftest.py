"""Fixtures for management-agent tests: a real router subprocess and a management client.

The router process and the AMQP client toolkit are those of tests/router (imported as
``tests.router.*``: tests/conftest.py puts the repository root on sys.path, so that plain
``pytest`` works as well as ``python -m pytest``).
"""

from __future__ import annotations

import pytest

from tests.management.mgmt import MgmtClient
from tests.router.amqpclient import Net
from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)
from tests.router.routerproc import Router, RouterFactory


@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    """A standalone router 'R1' with prefixes multicast/closest/balanced configured."""
    return router_factory()


@pytest.fixture
def mgmt(router: Router, net: Net) -> MgmtClient:
    """A management client on its own connection: sender to $management, dynamic reply-to."""
    return MgmtClient(net, net.connect(router.url))
