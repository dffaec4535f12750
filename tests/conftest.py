"""Fixtures every test folder may use. The Kubernetes control plane (etcd + kube-apiserver,
with controller-manager and scheduler for kube_control_plane) is session-wide: defined once
here, one instance serves the kube, operator, kubectl and gitops tests of a run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[1])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.kube.apiserver import kube_apiserver, kube_control_plane  # noqa: E402, F401 (shared fixtures)
from tests.router.routerkind import apply_marks  # noqa: E402
from tests.router.routerproc import build_proton_shim  # noqa: E402


def pytest_sessionstart(session: object) -> None:
    # Every folder starts routers from this checkout with this interpreter: give them the
    # compiled proton shim, as an installed router has.
    build_proton_shim()


# Per folder: a hung router, broker, client or cluster must fail its test, never hang the run.
# A test's own timeout marker wins.
FOLDER_TIMEOUTS_S: Dict[str, int] = {
    "management": 30,
    "router": 60, "tools": 60, "linkroute": 60, "policy": 60,
    "mesh": 90, "mesh_local": 90, "router_http": 90, "security": 90,
    "mesh_linkroute": 120, "interop": 180,
    "console": 150,
    "broker": 180,
    "e2e": 300,
    "telemetry": 900,
}
_TESTS_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    apply_marks(items)  # qdmesh_only / differs_from_c / c_router_bug, against the C router
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        try:
            folder = Path(str(item.fspath)).resolve().relative_to(_TESTS_DIR).parts[0]
        except ValueError:
            continue
        seconds = FOLDER_TIMEOUTS_S.get(folder)
        if seconds is not None:
            item.add_marker(pytest.mark.timeout(seconds))
