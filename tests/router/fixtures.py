"""The router-process fixtures every integration suite shares (imported by their conftests):
routers started with a custom config and checked at teardown, and the client event loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, List

import pytest

from .amqpclient import Net
from .routerproc import Router, RouterFactory


@pytest.fixture
def router_factory(tmp_path: Path) -> Iterator[RouterFactory]:
    """Start routers with custom config; each is SIGTERMed at teardown and must exit 0
    without having logged a traceback (unless the test killed it on purpose)."""
    started: List[Router] = []

    def make(**kwargs: Any) -> Router:
        workdir = tmp_path / f"r{len(started)}"
        workdir.mkdir()
        r = Router(workdir, **kwargs)
        started.append(r)
        return r.start()

    yield make
    stop_checked(started)


def stop_checked(routers: Iterable[Any]) -> None:
    """Stop every router (``stop(check=True)``), then fail the test with all their complaints
    (non-zero exit, traceback logged) at once."""
    errors = []
    for r in routers:
        try:
            r.stop(check=True)
        except AssertionError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)


@pytest.fixture
def net() -> Iterator[Net]:
    """The client event loop; all connections are closed at teardown."""
    n = Net()
    yield n
    n.close()
