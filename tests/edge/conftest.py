"""Fixtures for edge-router tests: interior and edge routers as real processes."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.edge.edgeproc import Routers
from tests.router.fixtures import net, router_factory, stop_checked  # noqa: F401 (shared fixtures)


@pytest.fixture
def routers(tmp_path: Path) -> Iterator[Routers]:
    made = Routers(tmp_path)
    yield made
    stop_checked(made.started)
