"""Fixtures for the alert tests: the real API server with qdmesh's CRDs, and real routers."""

from tests.operator.kube_operator import crds  # noqa: F401 (shared fixture)
from tests.router.fixtures import router_factory  # noqa: F401 (shared fixture)
