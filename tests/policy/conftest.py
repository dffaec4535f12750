"""Fixtures for policy tests: real router processes (tests/router's helpers) and real proton
clients that authenticate and name a virtual host."""

from __future__ import annotations

from tests.policy.harness import policy_router  # noqa: F401 (shared fixture)
from tests.router.fixtures import net  # noqa: F401 (shared fixture)
