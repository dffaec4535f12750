"""The kube tests use the session control-plane fixtures of tests/conftest.py."""

from __future__ import annotations

