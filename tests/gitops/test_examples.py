"""docs/examples: the reference's scenarios as custom resources, valid against the CRDs' schemas
(offline, strict: a misspelt field fails) and accepted by a real API server with the CRDs
installed (server-side dry run: CEL rules and defaults applied)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from tests.chart.tools import strict
from tests.kube.controlplane import ControlPlane
from tests.prerequisites import require

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "docs" / "examples").glob("*.yaml"))
PLURALS = {"RouterMesh": "routermeshes", "LinkRoute": "linkroutes", "AutoLink": "autolinks",
           "VhostPolicy": "vhostpolicies"}


def documents(path: Path) -> List[Dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def crd_schemas() -> Dict[str, Dict[str, Any]]:
    schemas = {}
    for path in (REPO / "crds").glob("qdmesh.io_*.yaml"):
        crd = yaml.safe_load(path.read_text())
        [version] = [v for v in crd["spec"]["versions"] if v["served"]]
        schemas[crd["spec"]["names"]["kind"]] = strict(version["schema"]["openAPIV3Schema"])
    return schemas


def _jsonschema() -> Any:
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    require(jsonschema is not None, "jsonschema (with kubernetes-validate: .ci/setup.d/30-helm-tools.sh)")
    return jsonschema


def test_every_scenario_is_there() -> None:
    names = {p.stem for p in EXAMPLES}
    assert names >= {"queue-waypoint", "sharded-queue", "link-route-private-broker", "vhost-policies"}
    kinds = {d["kind"] for p in EXAMPLES for d in documents(p)}
    assert kinds == set(PLURALS)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_match_the_crd_schemas(path: Path) -> None:
    jsonschema = _jsonschema()
    schemas = crd_schemas()
    for doc in documents(path):
        assert doc["apiVersion"] == "qdmesh.io/v1alpha1"
        body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in jsonschema.Draft7Validator(schemas[doc["kind"]]).iter_errors(body)]
        assert errors == [], f"{doc['kind']} {doc['metadata']['name']}"


def test_the_strict_schema_catches_a_misspelt_field() -> None:
    jsonschema = _jsonschema()
    schema = crd_schemas()["AutoLink"]
    bad = {"spec": {"meshRef": "m", "address": "a", "direction": "in", "conection": "broker"}}
    messages = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(bad)]
    assert any("conection" in m for m in messages)


def test_mesh_references_resolve_within_each_file() -> None:
    for path in EXAMPLES:
        docs = documents(path)
        meshes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "RouterMesh"}
        for doc in docs:
            if doc["kind"] == "RouterMesh":
                continue
            mesh = meshes[doc["spec"]["meshRef"]]
            connection = doc["spec"].get("connection")
            if connection:
                assert connection in {c["name"] for c in mesh["spec"].get("connectors", [])}, path.name


@pytest.mark.timeout(180)
def test_the_api_server_accepts_every_example(kube_apiserver: ControlPlane) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from tests.kubectl.kubeobjects import install_crds

    install_crds(kube_apiserver)
    api = client.CustomObjectsApi(kube_apiserver.api_client())
    refused = []
    for path in EXAMPLES:
        for doc in documents(path):
            try:
                created = api.create_namespaced_custom_object(
                    "qdmesh.io", "v1alpha1", "default", PLURALS[doc["kind"]], doc, dry_run="All")
            except ApiException as e:
                refused.append(f"{path.name} {doc['kind']}/{doc['metadata']['name']}: {e.body}")
                continue
            # What the user wrote comes back unchanged (defaults only add).
            for key, value in doc["spec"].items():
                assert created["spec"][key] == value or isinstance(value, (dict, list))
    assert refused == []
