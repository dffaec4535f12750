"""Fixtures for the interoperability tests: qdmesh routers and C routers side by side."""

from __future__ import annotations

from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)
