"""Fixtures for the web console tests: a real mesh of router processes, `qdmesh console` as a
real process, and headless Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List

import pytest

from tests.console.browser import available, start_browser
from tests.console.consoleproc import ConsoleProcess
from tests.prerequisites import require
from tests.router.amqpclient import Net


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
