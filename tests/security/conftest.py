"""Fixtures for SASL and TLS tests: real router processes, real proton clients, a Cyrus sasldb
and certificates made by the tests."""

from __future__ import annotations

from tests.policy.harness import policy_router  # noqa: F401 (shared fixture)
from tests.router.fixtures import net  # noqa: F401 (shared fixture)


