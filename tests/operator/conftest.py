"""Fixtures for the operator's tests: specs used across files, real router meshes, and the
real Kubernetes API server (shared fixture from tests/kube)."""

from __future__ import annotations

import sys
from pathlib import Path

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests.mesh.conftest import mesh_factory  # noqa: E402, F401 (shared fixture)
from tests.operator.kube_operator import crds, kube, operator  # noqa: E402, F401 (fixtures; kopf registers its handlers once per process, so one test module uses them)
from tests.router.fixtures import router_factory  # noqa: E402, F401 (shared fixture)
