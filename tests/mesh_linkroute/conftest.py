"""Fixtures for link routes, auto-links and waypoints across an interior mesh: a line of
three interior router processes A - B - C whose far end C holds the route-container
connections (to a qdmesh router acting as container, or to RabbitMQ)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Dict, List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.mesh.conftest import LINE3, MeshFactory, mesh_factory  # noqa: E402,F401 (fixture)
from tests.mesh.meshproc import Mesh  # noqa: E402
from tests.router.fixtures import net, router_factory  # noqa: E402,F401 (shared fixtures)

LineFactory = Callable[..., Mesh]
"""``line(extra={router: config sections}) -> started, converged mesh A - B - C``."""


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if "tests/mesh_linkroute" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(120))


@pytest.fixture
def line_factory(mesh_factory: MeshFactory) -> LineFactory:
    def make(extra: Dict[str, str] | None = None) -> Mesh:
        return mesh_factory(LINE3, extra=extra)

    return make
