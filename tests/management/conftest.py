"""Fixtures for management-agent tests: a real router subprocess and a management client.

The router process and the AMQP client toolkit are those of tests/router (imported as
``tests.router.*``: the repository root is put on sys.path so that plain ``pytest`` works
as well as ``python -m pytest``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator, List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.management.mgmt import MgmtClient  # noqa: E402
from tests.router.amqpclient import Net  # noqa: E402
from tests.router.routerproc import Router, RouterFactory  # noqa: E402


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    # A broken agent must fail a test, never hang the run.
    for item in items:
        if "tests/management" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(30))


@pytest.fixture
def router_factory(tmp_path: Path) -> Iterator[RouterFactory]:
    """Start routers with custom config; each is SIGTERMed at teardown and must exit 0
    without having logged a traceback."""
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
    """A standalone router 'R1' with prefixes multicast/closest/balanced configured."""
    return router_factory()


@pytest.fixture
def net() -> Iterator[Net]:
    n = Net()
    yield n
    n.close()


@pytest.fixture
def mgmt(router: Router, net: Net) -> MgmtClient:
    """A management client on its own connection: sender to $management, dynamic reply-to."""
    return MgmtClient(net, net.connect(router.url))
