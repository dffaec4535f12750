"""Fixtures for the chart tests: helm, kubeconform and the offline schemas (skip locally, fail
in CI when .ci/setup.d/30-helm-tools.sh has not installed them)."""

from __future__ import annotations

import pytest

from tests.prerequisites import require

from .tools import SchemaStore, bundled_schema_dir, find_tool


@pytest.fixture(scope="session")
def helm_available() -> None:
    require(find_tool("helm") is not None, "helm (.ci/setup.d/30-helm-tools.sh: go install helm)")


@pytest.fixture(scope="session")
def schema_store(tmp_path_factory: pytest.TempPathFactory, helm_available: None) -> SchemaStore:
    require(find_tool("kubeconform") is not None, "kubeconform (.ci/setup.d/30-helm-tools.sh)")
    bundled = bundled_schema_dir()
    require(bundled is not None, "kubernetes-validate's bundled schemas (pip install kubernetes-validate)")
    assert bundled is not None
    return SchemaStore(tmp_path_factory.mktemp("kube-schemas"), bundled)
