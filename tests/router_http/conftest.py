"""Fixtures for the router's HTTP listener tests: real router processes, real HTTP clients."""

from __future__ import annotations

from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)
