"""What a test needs from the machine (a broker, a Kubernetes API server, Spark, a browser).

Locally a missing prerequisite skips the test with the reason. CI (``.ci/run`` sets
``QDMESH_REQUIRE_ALL=1``) installs every prerequisite, so there a missing one fails the test
instead: nothing is silently skipped on the machine that decides whether work lands.
"""

from __future__ import annotations

import os

import pytest


def require(available: bool, what: str) -> None:
    """Skip (locally) or fail (in CI) the calling test unless ``available``."""
    if available:
        return
    if os.environ.get("QDMESH_REQUIRE_ALL") == "1":
        pytest.fail(f"prerequisite missing in CI: {what}", pytrace=False)
    pytest.skip(f"prerequisite missing: {what}")
