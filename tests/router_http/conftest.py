"""Fixtures for the router's HTTP listener tests: real router processes, real HTTP clients."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.router.fixtures import net, router_factory  # noqa: E402, F401 (shared fixtures)


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if "tests/router_http" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(90))
