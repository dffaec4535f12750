"""Fixtures for router integration tests: a real router subprocess and AMQP clients."""

from __future__ import annotations

import pytest

from tests.policy.harness import policy_router  # noqa: F401 (shared fixture: test_streaming_limits.py)
from tests.prerequisites import require

from .fixtures import net, router_factory  # noqa: F401 (shared fixtures)
from .routerkind import router_kind
from .routerproc import Router, RouterFactory, build_proton_shim

# Modules whose tests run twice: routers on the compiled proton shim, and on its Python
# fallback (QDROUTER_PROTON_SHIM=off; amqp/bindings/proton_shim.py). Between them they take every
# branch where the two differ: each outcome, settled and unsettled, sizes around the 64 KiB
# single read, streamed and aborted messages, every distribution, messages left waiting, a
# failure in the middle of a batch of events (the two walk batches differently).
BOTH_PROTON_SHIMS = {"test_outcomes.py", "test_message_sizes.py", "test_settle_modes.py",
                     "test_distribution.py", "test_proton_shim.py", "test_waiting_producers.py",
                     "test_fault_containment.py"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # (The C router has no proton shim: its tests run once.)
    if ("proton_shim" in metafunc.fixturenames and metafunc.definition.path.name in BOTH_PROTON_SHIMS
            and router_kind() == "qdmesh"):
        metafunc.parametrize("proton_shim", ["compiled", "fallback"], indirect=True)


@pytest.fixture(autouse=True)
def proton_shim(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which proton shim the test's routers use: "compiled" unless parametrized."""
    mode: str = getattr(request, "param", "compiled")
    if mode == "fallback":
        monkeypatch.setenv("QDROUTER_PROTON_SHIM", "off")
    elif hasattr(request, "param"):
        require(build_proton_shim().returncode == 0,
                "the router's proton shim, built (a C compiler and Python's headers)")
    return mode


@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    """A standalone router: prefixes multicast/closest/balanced, default distribution otherwise."""
    return router_factory()


