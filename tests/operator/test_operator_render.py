"""Rendering: each router's qdrouterd.conf and the mesh's Kubernetes objects, against golden
files (regenerate with QDMESH_UPDATE_GOLDEN=1 and review the diff), every conf loaded by the
router's own config parser, and values that cannot break the config syntax."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from qdmesh_operator import contract
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.entities import Entity
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.render import manifests
from qdmesh_operator.render.conf import RenderError, render_all, render_router_conf
from qdrouter.config import parse_config_text
from tests.operator.specs import MESH_SPEC, mesh, routing

GOLDEN = Path(__file__).parent / "golden"
OWNER = {"metadata": {"name": "demo", "uid": "0b7c6a52-1111-2222-3333-444455556666"}}


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("QDMESH_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.exists(), f"golden file {path} missing: run with QDMESH_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(), f"{name} differs from its golden file"


def test_full_mesh_confs_match_golden_files() -> None:
    confs = render_all(mesh_state(mesh(), routing()))
    assert sorted(confs) == ["demo-0.conf", "demo-1.conf", "demo-2.conf"]
    for key, text in confs.items():
        check_golden(f"fullmesh-{key}", text)


def test_redundant_mesh_confs_match_golden_files() -> None:
    spec = {
        **MESH_SPEC,
        "size": 6,
        "topology": {"type": "Redundant", "degree": 3},
        "interRouter": {"tls": {"mode": "Secret", "secretName": "demo-ir-tls"}},
    }
    confs = render_all(mesh_state(parse_mesh("demo", "messaging", spec), routing()))
    for key in ("demo-0.conf", "demo-5.conf"):
        check_golden(f"redundant-{key}", confs[key])


def test_rendered_confs_load_in_the_router_with_every_entity() -> None:
    state = mesh_state(mesh(), routing())
    for rid in state.mesh.router_ids():
        loaded = parse_config_text(render_router_conf(state, rid), f"{rid}.conf")
        by_name = {str(e.attributes.get("name")): e for e in loaded}
        router = next(e for e in loaded if e.section == "router")
        assert router.attributes["id"] == rid and router.attributes["mode"] == "interior"
        for wanted in state.entities[rid]:
            got = by_name[wanted.name]
            assert got.section == wanted.type
            for key, value in wanted.attributes.items():
                if key == "groups":
                    assert got.attributes[key]["admins"]["users"] == "alice,bob"
                else:
                    assert str(got.attributes[key]).lower() == str(value).lower(), (wanted.name, key)
        assert by_name["amqp"].attributes["port"] == "5672"
        assert by_name["inter-router"].attributes["role"] == "inter-router"


@pytest.mark.parametrize(
    "value",
    ["a # not a comment", "x } y", 'quote " and \\ backslash', "{user}/x", "ends with }", "single ' quote"],
)
def test_values_that_look_like_syntax_round_trip_exactly(value: str) -> None:
    spec = {**MESH_SPEC, "connectors": [{"name": "broker", "host": "h", "port": 1}], "addresses": []}
    state = mesh_state(parse_mesh("demo", "ns", spec), [])
    state.entities["demo-0"].append(
        Entity("linkRoute", "qdmesh/linkRoute/odd", {"prefix": value, "direction": "in", "containerId": "c"})
    )
    loaded = parse_config_text(render_router_conf(state, "demo-0"), "demo-0.conf")
    route = next(e for e in loaded if e.attributes.get("name") == "qdmesh/linkRoute/odd")
    assert route.attributes["prefix"] == value


def test_a_config_the_router_would_refuse_is_never_rendered() -> None:
    state = mesh_state(parse_mesh("demo", "ns", {}), [])
    state.entities["demo-0"].append(Entity("linkRoute", "qdmesh/linkRoute/bad", {"prefix": "p"}))
    with pytest.raises(RenderError, match=r"demo-0\.conf.*direction"):
        render_router_conf(state, "demo-0")


def test_attribute_names_must_be_identifiers() -> None:
    state = mesh_state(parse_mesh("demo", "ns", {}), [])
    state.entities["demo-0"].append(Entity("address", "qdmesh/address/x", {"prefix}\nrouter {": "p"}))
    with pytest.raises(RenderError, match="not a config attribute"):
        render_router_conf(state, "demo-0")


def objects() -> List[Dict[str, Any]]:
    m = mesh()
    confs = render_all(mesh_state(m, routing()))
    return manifests.mesh_objects(m, confs, owner=manifests.owner_reference(OWNER))


def test_manifests_match_golden_file() -> None:
    check_golden("fullmesh-manifests.yaml", yaml.safe_dump_all(objects(), sort_keys=True))


def test_every_object_is_owned_labelled_and_named_by_the_contract() -> None:
    made = {(o["kind"], o["metadata"]["name"]): o for o in objects()}
    assert set(made) == {
        ("ConfigMap", "demo-config"),
        ("Service", "demo-routers"),
        ("Service", "demo"),
        ("Service", "demo-edge"),
        ("PodDisruptionBudget", "demo"),
        ("StatefulSet", "demo"),
    }
    for obj in made.values():
        meta = obj["metadata"]
        assert meta["namespace"] == "messaging"
        assert meta["labels"] == contract.labels("demo")
        (owner,) = meta["ownerReferences"]
        assert owner == {
            "apiVersion": "qdmesh.io/v1alpha1",
            "kind": "RouterMesh",
            "name": "demo",
            "uid": OWNER["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    sts = made[("StatefulSet", "demo")]["spec"]
    pod = sts["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["qdrouterd", "-c", "/etc/qdrouterd/$(POD_NAME).conf"]
    assert container["image"] == "qdmesh/router:0.1.0"
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "amqp": 5672,
        "inter-router": 55672,
        "management": 55673,
        "http": 8672,
        "edge": 5673,
    }
    assert sts["serviceName"] == "demo-routers" and sts["replicas"] == 3
    assert sts["selector"] == {"matchLabels": {"qdmesh.io/mesh": "demo"}}
    headless = made[("Service", "demo-routers")]["spec"]
    assert headless["clusterIP"] == "None" and headless["publishNotReadyAddresses"]
    assert made[("Service", "demo-edge")]["spec"]["type"] == "NodePort"
    assert made[("Service", "demo-edge")]["spec"]["ports"][0]["nodePort"] == 30673
    data = made[("ConfigMap", "demo-config")]["data"]
    assert sorted(data) == ["demo-0.conf", "demo-1.conf", "demo-2.conf"]


def test_default_image_is_the_operators_own_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QDMESH_ROUTER_IMAGE", raising=False)
    assert parse_mesh("m", "ns", {}).image == f"qdmesh/router:{contract.package_version()}"
    monkeypatch.setenv("QDMESH_ROUTER_IMAGE", "registry.local/router:9")
    assert parse_mesh("m", "ns", {}).image == "registry.local/router:9"


def test_cert_manager_mode_adds_a_certificate_and_mounts_its_secret() -> None:
    m = parse_mesh(
        "demo",
        "ns",
        {"image": "r:1", "interRouter": {"tls": {"mode": "CertManager", "issuerRef": {"name": "mesh-ca"}}}},
    )
    made = manifests.mesh_objects(m, render_all(mesh_state(m, [])), owner=None)
    cert = next(o for o in made if o["kind"] == "Certificate")
    assert cert["spec"]["secretName"] == "demo-inter-router-tls"
    assert "*.demo-routers.ns.svc" in cert["spec"]["dnsNames"]
    sts = next(o for o in made if o["kind"] == "StatefulSet")
    volumes = sts["spec"]["template"]["spec"]["volumes"]
    assert {"name": "inter-router-tls", "secret": {"secretName": "demo-inter-router-tls"}} in volumes
