"""Fixtures for link routes, auto-links and waypoints across an interior mesh: a line of
three interior router processes A - B - C whose far end C holds the route-container
connections (to a qdmesh router acting as container, or to RabbitMQ)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.mesh.meshproc import Mesh, build_mesh, start_order  # noqa: E402
from tests.router.fixtures import net, router_factory  # noqa: E402,F401 (shared fixtures)

LINE3 = [("B", "A", 1), ("C", "B", 1)]
LineFactory = Callable[..., Mesh]
"""``line(extra={router: config sections}) -> started, converged mesh A - B - C``."""


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if "tests/mesh_linkroute" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(120))


@pytest.fixture
def line_factory(tmp_path: Path) -> Iterator[LineFactory]:
    meshes: List[Mesh] = []

    def make(extra: Dict[str, str] | None = None) -> Mesh:
        mesh = build_mesh(tmp_path / f"line{len(meshes)}", LINE3)
        for name, config in (extra or {}).items():
            mesh.routers[name].extra = config
            mesh.routers[name].write_config()
        meshes.append(mesh)
        t0 = time.monotonic()
        for name in start_order(list(mesh.routers), LINE3):
            mesh.routers[name].start()
        mesh.wait_converged(timeout=mesh.timers.convergence_bound + time.monotonic() - t0 + 5)
        return mesh

    yield make
    errors = []
    for mesh in meshes:
        mesh.close()
        for r in mesh.routers.values():
            try:
                r.stop(check=True)
            except AssertionError as e:
                errors.append(str(e))
    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)
