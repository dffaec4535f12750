"""Fixtures for link routes, auto-links and waypoints across an interior mesh: a line of
three interior router processes A - B - C whose far end C holds the route-container
connections (to a qdmesh router acting as container, or to RabbitMQ)."""

from __future__ import annotations

from typing import Callable, Dict

import pytest

from tests.mesh.conftest import LINE3, MeshFactory, mesh_factory  # noqa: F401 (fixture)
from tests.mesh.meshproc import Mesh
from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)

LineFactory = Callable[..., Mesh]
"""``line(extra={router: config sections}) -> started, converged mesh A - B - C``."""


@pytest.fixture
def line_factory(mesh_factory: MeshFactory) -> LineFactory:
    def make(extra: Dict[str, str] | None = None) -> Mesh:
        return mesh_factory(LINE3, extra=extra)

    return make
