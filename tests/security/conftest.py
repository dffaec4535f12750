"""Fixtures for SASL and TLS tests: real router processes, real proton clients, a Cyrus sasldb
and certificates made by the tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.policy.harness import policy_router  # noqa: E402,F401 (shared fixture)
from tests.router.fixtures import net  # noqa: E402,F401 (shared fixture)


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if "tests/security" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(90))
