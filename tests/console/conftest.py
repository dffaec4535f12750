"""Fixtures for the web console tests: a real mesh of router processes, `qdmesh console` as a
real process, and headless Chromium."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator, List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.console.browser import available, start_browser  # noqa: E402
from tests.console.consoleproc import ConsoleProcess  # noqa: E402
from tests.prerequisites import require  # noqa: E402
from tests.router.amqpclient import Net  # noqa: E402


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if "tests/console" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(150))


@pytest.fixture
def browser() -> Iterator[object]:
    require(available(), "Debian chromium and chromium-driver, and selenium (.ci/setup.d/70-chromium.sh)")
    yield from start_browser()


@pytest.fixture
def consoles(tmp_path: Path) -> Iterator[List[ConsoleProcess]]:
    """Started consoles are stopped at teardown and must exit 0 without a traceback."""
    started: List[ConsoleProcess] = []
    yield started
    errors = [error for console in started for error in [console.stop()] if error]
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)


@pytest.fixture
def net() -> Iterator[Net]:
    n = Net()
    yield n
    n.close()
