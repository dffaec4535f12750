"""The model: specs read with every bad field named, and cross-object mistakes reported
against the resource that makes them (never half-applied)."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.errors import ReferenceError_, SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.model.routing import parse_auto_link, parse_link_route, parse_vhost
from tests.operator.specs import MESH_SPEC, mesh, routing


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"size": 0}, "spec.size", "at least 1"),
        ({"size": "3"}, "spec.size", "integer"),
        ({"image": "qdmesh/router:latest"}, "spec.image", "latest"),
        ({"topology": {"type": "Star"}}, "spec.topology.type", "FullMesh"),
        ({"size": 3, "topology": {"type": "Redundant", "degree": 3}}, "spec.topology.degree", "smaller"),
        (
            {"router": {"helloIntervalSeconds": 5, "helloMaxAgeSeconds": 3}},
            "spec.router.helloMaxAgeSeconds",
            "larger",
        ),
        ({"listeners": [{"name": "a", "port": 55672}]}, "spec.listeners[0].port", "reserved"),
        ({"listeners": [{"name": "a", "port": 5672}]}, "spec.listeners[0].port", "default amqp"),
        (
            {"listeners": [{"name": "a", "port": 6000}, {"name": "b", "port": 6000}]},
            "spec.listeners[1].port",
            "already used",
        ),
        ({"listeners": [{"name": "Bad_Name", "port": 6000}]}, "spec.listeners[0].name", "match"),
        (
            {"listeners": [{"name": "a", "port": 6000, "nodePort": 30001}]},
            "spec.listeners[0].nodePort",
            "NodePort",
        ),
        ({"connectors": [{"name": "b", "host": "x\ny", "port": 1}]}, "spec.connectors[0].host", "control"),
        ({"connectors": [{"name": "b", "port": 1}]}, "spec.connectors[0].host", "required"),
        ({"addresses": [{"prefix": "a", "pattern": "b"}]}, "spec.addresses[0]", "exactly one"),
        ({"addresses": [{"prefix": "a"}, {"prefix": "a"}]}, "spec.addresses[1]", "never apply"),
        ({"interRouter": {"tls": {"mode": "Secret"}}}, "spec.interRouter.tls.secretName", "required"),
        ({"pod": {"labels": {"qdmesh.io/mesh": "x"}}}, "spec.pod.labels.qdmesh.io/mesh", "operator"),
    ],
)
def test_bad_mesh_specs_name_the_field(spec: Dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", spec)
    assert caught.value.field == field
    assert words in str(caught.value)
    assert str(caught.value).startswith(field + ": ")


def test_mesh_name_longer_than_dns_allows_is_refused() -> None:
    with pytest.raises(SpecError, match=r"metadata\.name: must be at most 40"):
        parse_mesh("m" * 41, "ns", {})


@pytest.mark.parametrize(
    ("parse", "spec", "field"),
    [
        (
            parse_link_route,
            {"meshRef": "m", "connection": "b"},
            "spec: give exactly one of prefix or pattern",
        ),
        (
            parse_link_route,
            {"meshRef": "m", "prefix": "a"},
            "spec: give exactly one of connection or containerId",
        ),
        (
            parse_link_route,
            {"meshRef": "m", "prefix": "a", "containerId": "c", "direction": "up"},
            "spec.direction: 'up' is not one of in, out, both",
        ),
        (
            parse_auto_link,
            {"meshRef": "m", "address": "q", "containerId": "c"},
            "spec.direction: is required",
        ),
        (
            parse_auto_link,
            {"meshRef": "m", "address": "q", "direction": "in", "containerId": "c", "phase": 12},
            "spec.phase: must be at most 9 (got 12)",
        ),
        (
            parse_vhost,
            {"meshRef": "m", "hostname": "h", "groups": {"g": {"maxSenderz": 1}}},
            "spec.groups.g.maxSenderz: is not a vhost group setting",
        ),
        (
            parse_vhost,
            {"meshRef": "m", "hostname": "h", "groups": {"g": {"users": ["a,b"]}}},
            "spec.groups.g.users[0]: must not contain ','",
        ),
        (parse_vhost, {"hostname": "h"}, "spec.meshRef: is required"),
    ],
)
def test_bad_routing_specs_name_the_field(parse: Any, spec: Dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse("x", spec)
    assert str(caught.value) == field


def test_unknown_connector_is_a_problem_of_that_resource_only() -> None:
    bad = parse_link_route("stray", {"meshRef": "demo", "prefix": "s.", "connection": "nosuch"})
    state = mesh_state(mesh(), [*routing(), bad])
    assert [(p.kind, p.name) for p in state.problems] == [("LinkRoute", "stray")]
    assert isinstance(state.problems[0].error, ReferenceError_)
    assert "RouterMesh 'demo' has no connector 'nosuch' (its connectors: broker)" in str(
        state.problems[0].error
    )
    names = {e.name for e in state.entities["demo-0"]}
    assert not any("stray" in n for n in names)
    assert "qdmesh/linkRoute/orders-in" in names and "qdmesh/linkRoute/orders-out" in names


def test_every_router_gets_the_routing_entities_and_its_own_inter_router_connectors() -> None:
    state = mesh_state(mesh(), routing())
    for ordinal, rid in enumerate(["demo-0", "demo-1", "demo-2"]):
        entities = state.entities[rid]
        peers = [e.attributes["host"] for e in entities if e.name.startswith("qdmesh/interRouter/")]
        assert peers == [f"demo-{j}.demo-routers.messaging.svc" for j in range(ordinal)]
        assert [e.name for e in entities if e.type == "autoLink"] == [
            "qdmesh/autoLink/q1-in",
            "qdmesh/autoLink/q1-out",
        ]
    vhost = next(e for e in state.entities["demo-0"] if e.type == "vhost")
    assert vhost.attributes["groups"]["admins"]["users"] == "alice,bob"


def test_tls_and_password_settings_wait_for_a_restart() -> None:
    spec = {
        **MESH_SPEC,
        "connectors": [
            {
                "name": "broker",
                "host": "b",
                "port": 5671,
                "tlsSecretName": "ca",
                "saslUsername": "u",
                "saslPasswordSecretRef": {"name": "s", "key": "p"},
            }
        ],
    }
    state = mesh_state(parse_mesh("demo", "ns", spec), [])
    connector = next(e for e in state.entities["demo-0"] if e.name == "qdmesh/connector/broker")
    assert connector.restart_only
    assert connector.attributes["saslPassword"] == "env:QDMESH_SASL_PASSWORD_BROKER"
    assert "qdmesh/connector/broker" in state.restart_only_names("demo-0")
    assert all(e.name != "qdmesh/connector/broker" for e in state.live_entities("demo-0"))


def test_restart_hash_changes_only_with_restart_settings() -> None:
    base = mesh()
    more_routes = parse_mesh("demo", "messaging", {**MESH_SPEC, "addresses": []})
    timers = parse_mesh("demo", "messaging", {**MESH_SPEC, "router": {"raIntervalSeconds": 20}})
    assert base.restart_hash() == more_routes.restart_hash()
    assert base.restart_hash() != timers.restart_hash()
