"""The real API server fixture, for validating the examples against the installed CRDs."""

from __future__ import annotations

from tests.kube.apiserver import kube_apiserver  # noqa: F401 (shared fixture)
