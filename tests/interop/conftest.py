"""Fixtures for interoperability tests against the C router (qdrouterd 1.19): ``c_router``
starts qdrouterd-c processes (skipped locally, failed in CI, saying why, where it is not built), with the
project's own router processes and client toolkit alongside."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest

from tests.interop.cpeer import CRouter, require_c_router, stop_all
from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)

CRouterFactory = Callable[..., CRouter]


@pytest.fixture
def c_router(tmp_path: Path) -> Iterator[CRouterFactory]:
    binary = require_c_router()
    started: List[CRouter] = []

    def make(router_id: str, **kwargs: Any) -> CRouter:
        workdir = tmp_path / f"c-{router_id}"
        workdir.mkdir()
        router = CRouter(binary, workdir, router_id, **kwargs)
        started.append(router)
        return router.start()

    yield make
    stop_all(started)
