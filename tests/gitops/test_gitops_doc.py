"""docs/gitops.md's manifests stay usable: every YAML block parses, and the chart values its Argo
CD Application and Flux HelmRelease pass are accepted by the chart (values.schema.json and the
templates' own checks, through `helm template`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from tests.chart.tools import CHART, find_tool, helm
from tests.prerequisites import require

DOC = Path(__file__).resolve().parents[2] / "docs" / "gitops.md"


def manifests() -> List[Dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    return [doc for block in blocks for doc in yaml.safe_load_all(block) if doc]


def test_the_doc_shows_both_tools_for_chart_and_meshes() -> None:
    kinds = [doc["kind"] for doc in manifests()]
    assert kinds.count("Application") == 2  # Argo CD: the chart, the meshes
    assert {"GitRepository", "HelmRelease", "Kustomization"} <= set(kinds)  # Flux
    for app in (doc for doc in manifests() if doc["kind"] == "Application"):
        assert "ServerSideApply=true" in app["spec"]["syncPolicy"]["syncOptions"], app["metadata"]["name"]


def test_flux_depends_on_names_a_kustomization_of_the_page() -> None:
    # Flux's Kustomization.spec.dependsOn may name only Kustomizations.
    kustomizations = {doc["metadata"]["name"] for doc in manifests() if doc["kind"] == "Kustomization"}
    depends = [dep["name"] for doc in manifests() if doc["kind"] == "Kustomization"
               for dep in doc["spec"].get("dependsOn", [])]
    assert depends, "the meshes' Kustomization waits for the chart's"
    assert set(depends) <= kustomizations, (depends, kustomizations)


def _chart_values() -> List[Dict[str, Any]]:
    found = []
    for doc in manifests():
        if doc["kind"] == "Application" and "helm" in doc["spec"]["source"]:
            found.append(doc["spec"]["source"]["helm"]["valuesObject"])
        if doc["kind"] == "HelmRelease":
            found.append(doc["spec"]["values"])
    return found


@pytest.mark.parametrize("index", range(2))
def test_the_chart_accepts_the_values_the_doc_passes(index: int, tmp_path: Path) -> None:
    require(find_tool("helm") is not None, "helm (.ci/setup.d/30-helm-tools.sh: go install helm)")
    values = _chart_values()
    assert len(values) == 2, values
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values[index]))
    result = helm("template", "qd", str(CHART), "--namespace", "qdmesh-system", "--values",
                  str(tmp_path / "values.yaml"), check=False)
    assert result.returncode == 0, result.stderr
