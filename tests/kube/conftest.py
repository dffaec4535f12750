"""The real API server fixtures, for the tests that prove them."""

from __future__ import annotations

from tests.kube.apiserver import kube_apiserver, kube_control_plane  # noqa: F401 (shared fixtures)
