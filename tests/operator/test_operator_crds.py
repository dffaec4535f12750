"""The CRDs in crds/: names from the Kubernetes contract, structural schemas, CEL rules with
messages, printer columns, subresources; and schema defaults that agree with the model's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
import yaml

from qdmesh_operator.model.mesh import parse_mesh

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"

# kind -> (plural, short names) as docs/kubernetes-contract.md has them.
CONTRACT = {
    "RouterMesh": ("routermeshes", ["qdm", "rmesh"]),
    "LinkRoute": ("linkroutes", ["qdlr"]),
    "AutoLink": ("autolinks", ["qdal"]),
    "VhostPolicy": ("vhostpolicies", ["qdvp"]),
    "MeshLink": ("meshlinks", ["ml"]),
    "MeshAccessGrant": ("meshaccessgrants", ["mag"]),
}


def load(plural: str) -> Dict[str, Any]:
    return yaml.safe_load((CRD_DIR / f"qdmesh.io_{plural}.yaml").read_text())


def schema(crd: Dict[str, Any]) -> Dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def walk(node: Dict[str, Any], path: str = "") -> Iterator[Tuple[str, Dict[str, Any]]]:
    yield path, node
    for name, child in (node.get("properties") or {}).items():
        yield from walk(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


def test_directory_holds_exactly_the_contracts_kinds() -> None:
    assert sorted(p.name for p in CRD_DIR.glob("*.yaml")) == sorted(
        f"qdmesh.io_{plural}.yaml" for plural, _ in CONTRACT.values()
    )


@pytest.mark.parametrize("kind", sorted(CONTRACT))
def test_names_follow_the_contract(kind: str) -> None:
    plural, short = CONTRACT[kind]
    crd = load(plural)
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{plural}.qdmesh.io"
    spec = crd["spec"]
    assert spec["group"] == "qdmesh.io" and spec["scope"] == "Namespaced"
    names = spec["names"]
    assert (names["kind"], names["plural"], names["shortNames"], names["categories"]) == (
        kind,
        plural,
        short,
        ["qdmesh"],
    )
    assert [v["name"] for v in spec["versions"]] == ["v1alpha1"]
    assert spec["versions"][0]["served"] and spec["versions"][0]["storage"]


@pytest.mark.parametrize("plural", [p for p, _ in CONTRACT.values()])
def test_schema_is_structural(plural: str) -> None:
    """Every node has a type (or preserves unknown fields on purpose, or is an int-or-string
    such as a resource quantity); objects with free-form content say so; the API server
    refuses non-structural schemas."""
    problems: List[str] = []
    for path, node in walk(schema(load(plural))):
        if "type" not in node and not (node.get("x-kubernetes-preserve-unknown-fields")
                                       or node.get("x-kubernetes-int-or-string")):
            problems.append(f"{path or '<root>'}: no type")
        if node.get("type") == "array" and "items" not in node:
            problems.append(f"{path}: array without items")
    assert not problems


@pytest.mark.parametrize("plural", [p for p, _ in CONTRACT.values()])
def test_every_cel_rule_has_a_message_naming_a_field(plural: str) -> None:
    rules = [
        (path, rule)
        for path, node in walk(schema(load(plural)))
        for rule in node.get("x-kubernetes-validations", [])
    ]
    assert rules, "each kind has CEL rules"
    for path, rule in rules:
        assert set(rule) >= {"rule", "message"}, path
        if path.endswith("{}"):
            # A rule on each value of a map: the API server's error starts with the value's
            # own path (spec.pod.resources.requests[cpu]), so the message need not name it.
            continue
        assert (
            "spec." in rule["message"]
            or "each" in rule["message"]
            or "give" in rule["message"]
            or "only" in rule["message"]
        ), f"{path}: {rule['message']!r} names no field"


@pytest.mark.parametrize("plural", [p for p, _ in CONTRACT.values()])
def test_status_subresource_and_kstatus_conditions(plural: str) -> None:
    version = load(plural)["spec"]["versions"][0]
    assert version["subresources"]["status"] == {}
    status = schema(load(plural))["properties"]["status"]["properties"]
    assert status["observedGeneration"]["type"] == "integer"
    conditions = status["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert set(conditions["items"]["properties"]) >= {
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    }
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Ready"] == '.status.conditions[?(@.type=="Ready")].status'
    assert columns["Age"] == ".metadata.creationTimestamp"


def test_routermesh_scale_subresource_points_at_real_fields() -> None:
    crd = load("routermeshes")
    scale = crd["spec"]["versions"][0]["subresources"]["scale"]
    root = schema(crd)["properties"]
    assert scale == {
        "specReplicasPath": ".spec.size",
        "statusReplicasPath": ".status.routers",
        "labelSelectorPath": ".status.selector",
    }
    assert root["spec"]["properties"]["size"]["type"] == "integer"
    assert root["status"]["properties"]["routers"]["type"] == "integer"
    assert root["status"]["properties"]["selector"]["type"] == "string"


def _defaults(node: Dict[str, Any]) -> Any:
    """The object the API server would default an empty spec to (one level of objects deep)."""
    out: Dict[str, Any] = {}
    for name, child in (node.get("properties") or {}).items():
        if "default" in child:
            value = child["default"]
            if child.get("type") == "object" and isinstance(value, dict):
                value = {**_defaults(child), **value}
            out[name] = value
    return out


def test_schema_defaults_agree_with_the_model() -> None:
    """An empty spec defaulted by the API server and an empty spec read by the model give
    the same mesh: no default lives in only one place."""
    spec_schema = schema(load("routermeshes"))["properties"]["spec"]
    defaulted = _defaults(spec_schema)
    assert defaulted["size"] == 3
    from_server = parse_mesh("m", "ns", {**defaulted, "image": "qdmesh/router:1"})
    from_model = parse_mesh("m", "ns", {"image": "qdmesh/router:1"})
    assert from_server == from_model


def test_cel_rules_reference_only_declared_fields() -> None:
    """A typo in a rule (self.sise) would only be caught by the API server at install time."""
    import re

    for plural, _ in [CONTRACT[k] for k in CONTRACT]:
        for path, node in walk(schema(load(plural))):
            props = set(node.get("properties") or {})
            for rule in node.get("x-kubernetes-validations", []):
                for field in re.findall(r"\bself\.([A-Za-z]+)", rule["rule"]):
                    if props:
                        assert field in props | {"all", "exists_one", "endsWith"}, (plural, path, field)
