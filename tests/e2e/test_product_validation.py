"""Invalid resources are refused by the API server with the CRDs' CEL messages (the
``x-kubernetes-validations`` of the chart's CRDs), through server-side apply as ``kubectl apply
--server-side`` sends it; nothing refused is stored, and a changed immutable field leaves the
stored object as it was."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Tuple

import pytest
import yaml
from kubernetes import client

from .kube import eventually
from .mesh_fixtures import fresh_namespace
from .product import CHART, apply_resource, condition, read_resource, resource_gone

MSG_MESH_REF = "spec.meshRef cannot change; create a new {kind} instead"
ONE_TARGET = "give exactly one of spec.connection (a connector of the RouterMesh) or spec.containerId"
LISTENER = {"name": "extra", "port": 5673}
BOTH_SOURCES = {"sources": ["a"], "sourcePattern": "a"}
BOTH_TARGETS = {"targets": ["a"], "targetPattern": "a"}
AUTO_LINK = {"meshRef": "m", "address": "q", "direction": "in", "containerId": "b"}

# (kind, spec, the rule's message)
REFUSED_ON_CREATE: List[Tuple[str, Dict[str, Any], str]] = [
    ("RouterMesh", {"size": 3, "image": "qdmesh/router:latest"},
     "spec.image must name a version, not the 'latest' tag"),
    ("RouterMesh", {"size": 3, "topology": {"type": "Redundant", "degree": 3}},
     "spec.topology.degree must be smaller than spec.size (each router connects to degree others)"),
    ("RouterMesh", {"size": 3, "listeners": [{"name": "ir", "port": 55673}]},
     "spec.listeners: ports 55672 (inter-router), 55673 (the operator's management) and 8672 "
     "(health and metrics) are reserved"),
    ("RouterMesh", {"size": 3, "listeners": [LISTENER, {**LISTENER, "name": "again"}]},
     "spec.listeners: two listeners cannot share a port"),
    ("RouterMesh", {"size": 3, "listeners": [{**LISTENER, "nodePort": 30673}]},
     "nodePort is only allowed with expose NodePort"),
    ("RouterMesh", {"size": 3, "router": {"helloIntervalSeconds": 5, "helloMaxAgeSeconds": 5}},
     "spec.router.helloMaxAgeSeconds must be larger than helloIntervalSeconds"),
    ("RouterMesh", {"size": 3, "router": {"raIntervalSeconds": 2, "raIntervalFluxSeconds": 4}},
     "spec.router.raIntervalSeconds must be at least raIntervalFluxSeconds"),
    ("RouterMesh", {"size": 3, "addresses": [{"prefix": "a/", "pattern": "b/#"}]},
     "each address needs exactly one of prefix or pattern"),
    ("LinkRoute", {"meshRef": "m", "prefix": "a.", "pattern": "b.#", "containerId": "broker"},
     "give exactly one of spec.prefix or spec.pattern"),
    ("LinkRoute", {"meshRef": "m", "prefix": "a."}, ONE_TARGET),
    ("AutoLink", {"meshRef": "m", "address": "q", "direction": "in", "containerId": "b", "connection": "c"},
     ONE_TARGET),
    ("VhostPolicy", {"meshRef": "m", "hostname": "h", "groups": {"g": BOTH_SOURCES}},
     "give sources or sourcePattern, not both"),
    ("VhostPolicy", {"meshRef": "m", "hostname": "h", "groups": {"g": BOTH_TARGETS}},
     "give targets or targetPattern, not both"),
]

# (kind, a valid spec, the field changed afterwards, the rule's message)
REFUSED_ON_CHANGE: List[Tuple[str, Dict[str, Any], Dict[str, Any], str]] = [
    ("LinkRoute", {"meshRef": "m", "prefix": "a.", "containerId": "broker"}, {"meshRef": "other"},
     MSG_MESH_REF.format(kind="LinkRoute")),
    ("AutoLink", AUTO_LINK, {"meshRef": "other"},
     MSG_MESH_REF.format(kind="AutoLink")),
    ("VhostPolicy", {"meshRef": "m", "hostname": "h"}, {"meshRef": "other"},
     MSG_MESH_REF.format(kind="VhostPolicy")),
    ("VhostPolicy", {"meshRef": "m", "hostname": "h"}, {"hostname": "h2"},
     "spec.hostname cannot change; create a new VhostPolicy instead"),
]

PLURALS = {"RouterMesh": "routermeshes", "LinkRoute": "linkroutes", "AutoLink": "autolinks",
           "VhostPolicy": "vhostpolicies"}


def cel_messages() -> List[str]:
    """Every CEL rule message of the CRDs the chart installs."""
    found: List[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or []:
                found.append(rule["message"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted((CHART / "crds").glob("*.yaml")):
        walk(yaml.safe_load(path.read_text()))
    return found


@pytest.fixture(scope="module")
def ns(operator_namespace: str, core: Any) -> Iterator[str]:
    name = fresh_namespace(core, "cel")
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def refusal(k8s: Any, ns: str, kind: str, name: str, spec: Dict[str, Any]) -> str:
    """Apply ``spec``; the API server's message (the test fails if it was accepted)."""
    try:
        apply_resource(k8s, ns, PLURALS[kind], kind, name, spec)
    except client.ApiException as e:
        assert e.status == 422, f"{kind} {spec}: HTTP {e.status} {e.body}"
        return str(json.loads(e.body or "{}").get("message"))
    raise AssertionError(f"the API server accepted an invalid {kind}: {spec}")


def test_the_rules_tested_here_are_the_crds_rules() -> None:
    messages = cel_messages()
    for _, _, message in REFUSED_ON_CREATE:
        assert message in messages, f"no CEL rule says {message!r}"
    for _, _, _, message in REFUSED_ON_CHANGE:
        assert message in messages, f"no CEL rule says {message!r}"


@pytest.mark.parametrize("kind,spec,message", REFUSED_ON_CREATE,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(REFUSED_ON_CREATE)])
def test_invalid_resource_refused_with_the_rule_message(
        k8s: Any, ns: str, kind: str, spec: Dict[str, Any], message: str) -> None:
    name = f"bad-{kind.lower()}"
    error = refusal(k8s, ns, kind, name, spec)
    assert message in error, f"the API server's error does not carry {message!r}:\n{error}"
    assert resource_gone(k8s, ns, PLURALS[kind], name), "the refused resource was stored"


@pytest.mark.parametrize("kind,spec,change,message", REFUSED_ON_CHANGE,
                         ids=[f"{c[0]}-{'-'.join(c[2])}" for c in REFUSED_ON_CHANGE])
def test_immutable_field_change_refused_with_the_rule_message(
        k8s: Any, ns: str, kind: str, spec: Dict[str, Any], change: Dict[str, Any], message: str) -> None:
    name = f"fixed-{kind.lower()}-{'-'.join(change).lower()}"
    apply_resource(k8s, ns, PLURALS[kind], kind, name, spec)
    error = refusal(k8s, ns, kind, name, {**spec, **change})
    assert message in error, f"the API server's error does not carry {message!r}:\n{error}"
    stored = read_resource(k8s, ns, PLURALS[kind], name)["spec"]
    assert all(stored[key] == spec[key] for key in change), stored


def test_valid_resource_for_a_missing_mesh_is_stalled(k8s: Any, ns: str) -> None:
    """The schema cannot see another object: a LinkRoute for a mesh that does not exist is
    accepted, and its status says why nothing happens."""
    apply_resource(k8s, ns, "linkroutes", "LinkRoute", "orphan", {"meshRef": "nowhere", "prefix": "a.",
                                                                 "containerId": "broker"})

    def stalled() -> bool:
        cond = condition(read_resource(k8s, ns, "linkroutes", "orphan"), "Stalled")
        return cond is not None and cond.get("status") == "True" and cond.get("reason") == "MeshNotFound"

    eventually(stalled, 60, "LinkRoute orphan Stalled with reason MeshNotFound",
               describe=lambda: str(read_resource(k8s, ns, "linkroutes", "orphan").get("status")))
