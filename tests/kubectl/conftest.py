"""Fixtures: a real local mesh (router processes) and the real API server fixture."""

from __future__ import annotations

from typing import Iterator

import pytest

from .localmesh import LocalMesh, start_local_mesh


@pytest.fixture(scope="module")
def local_mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalMesh]:
    yield from start_local_mesh(tmp_path_factory.mktemp("kubectl-mesh"))
