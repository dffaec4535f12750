"""Fixtures every test folder may use. The Kubernetes control plane (etcd + kube-apiserver,
with controller-manager and scheduler for kube_control_plane) is session-wide: defined once
here, one instance serves the kube, operator, kubectl and gitops tests of a run."""

from __future__ import annotations

import sys
from pathlib import Path

_REPO_ROOT = str(Path(__file__).resolve().parents[1])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.kube.apiserver import kube_apiserver, kube_control_plane  # noqa: E402, F401 (shared fixtures)
from tests.router.routerproc import build_proton_shim  # noqa: E402


def pytest_sessionstart(session: object) -> None:
    # Every folder starts routers from this checkout with this interpreter: give them the
    # compiled proton shim, as an installed router has.
    build_proton_shim()
