"""The gitops tests use the session API server fixture of tests/conftest.py."""

from __future__ import annotations

