"""Fixtures for the hostile-clients tier: a real router (qdmesh, or the C router through
tests/router/routerkind.py) and the shared client event loop."""

from __future__ import annotations

import pytest

from tests.linkroute.conftest import container, edge, edge_factory  # noqa: F401 (shared fixtures)
from tests.mesh.conftest import mesh_factory  # noqa: F401 (shared fixture)
from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)
from tests.router.routerproc import Router, RouterFactory


@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    return router_factory()
