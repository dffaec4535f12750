"""Fixtures for the operator's tests: specs used across files, real router meshes, and the
real Kubernetes API server (shared fixture from tests/kube)."""

from __future__ import annotations

from tests.mesh.conftest import mesh_factory  # noqa: F401 (shared fixture)
from tests.operator.kube_operator import crds, kube, operator  # noqa: F401 (fixtures; kopf registers its handlers once per process, so one test module uses them)
from tests.router.fixtures import router_factory  # noqa: F401 (shared fixture)
