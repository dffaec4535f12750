"""spec.linkAccess rendered, against golden files (regenerate with QDMESH_UPDATE_GOLDEN=1 and
review the diff): per type, the exposure objects, the link listener's Secret volume and port
in the router pods, and the link sections of a router's config; and the refusals of the
model and of MeshAccessGrant specs, each naming the field."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Dict

import pytest
import yaml

from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.grants.spec import parse_duration, parse_grant, redemption_state
from qdmesh_operator.linking.wire import RedeemRequest, WireError
from qdmesh_operator.model.errors import SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.render import manifests
from qdmesh_operator.render.conf import render_router_conf
from qdmesh_operator.render.link_access import advertised_port
from qdrouter.config import parse_config_text
from tests.operator.test_operator_render import OWNER, check_golden

ACCESS = {
    "NodePort": {"type": "NodePort", "host": "links.example.com", "nodePort": 31671},
    "LoadBalancer": {"type": "LoadBalancer"},
    "Ingress": {"type": "Ingress", "host": "links.example.com"},
    "Route": {"type": "Route", "host": "links.apps.example.com", "port": 55680, "cost": 50},
}


def spec(access: Dict[str, Any]) -> Dict[str, Any]:
    return {"size": 2, "image": "qdmesh/router:0.1.0", "linkAccess": access}


@pytest.mark.parametrize("kind", sorted(ACCESS))
def test_link_access_renders_as_its_golden_file(kind: str) -> None:
    mesh = parse_mesh("demo", "messaging", spec(ACCESS[kind]))
    state = mesh_state(mesh, [])
    objects = manifests.mesh_objects(mesh, {}, owner=manifests.owner_reference(OWNER))
    sts = objects[-1]
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    link = {
        "exposure": [o for o in objects if o["metadata"]["name"] == "demo-link"],
        "volume": [v for v in pod["volumes"] if v["name"] == "link-tls"],
        "mount": [m for m in container["volumeMounts"] if m["name"] == "link-tls"],
        "port": [p for p in container["ports"] if p["name"] == "link"],
        "advertisedPort": advertised_port(mesh),
    }
    conf = render_router_conf(state, "demo-1")
    parse_config_text(conf, "demo-1.conf")  # the router loads it
    sections = conf[conf.index("sslProfile {\n    name: \"link-tls\""):]
    sections = sections[:sections.index("}\n", sections.index("qdmesh/linkListener/link")) + 2]
    plain = json.loads(json.dumps(link))  # no YAML anchors for the owner reference they share
    check_golden(f"link-access-{kind}.yaml", yaml.safe_dump(plain, sort_keys=False) + "---\n" + sections)


def test_without_link_access_nothing_is_added() -> None:
    mesh = parse_mesh("demo", "messaging", {"size": 1, "image": "qdmesh/router:0.1.0"})
    objects = manifests.mesh_objects(mesh, {}, owner=None)
    assert not [o for o in objects if o["metadata"]["name"] == "demo-link"]
    assert "link-tls" not in render_router_conf(mesh_state(mesh, []), "demo-0")


@pytest.mark.parametrize("access,field", [
    ({"type": "NodePort"}, "spec.linkAccess.host"),
    ({"type": "Ingress"}, "spec.linkAccess.host"),
    ({"type": "Route"}, "spec.linkAccess.host"),
    ({"type": "LoadBalancer", "nodePort": 31000}, "spec.linkAccess.nodePort"),
    ({"type": "LoadBalancer", "port": 55672}, "spec.linkAccess.port"),
    ({"type": "LoadBalancer", "port": 5672}, "spec.linkAccess.port"),
    ({"type": "Tunnel"}, "spec.linkAccess.type"),
    ({"type": "LoadBalancer", "cost": 0}, "spec.linkAccess.cost"),
    ({"type": "LoadBalancer", "edgePort": 55671}, "spec.linkAccess.edgePort"),
    ({"type": "LoadBalancer", "edgePort": 5672}, "spec.linkAccess.edgePort"),
    ({"type": "LoadBalancer", "edgeNodePort": 31000}, "spec.linkAccess.edgeNodePort"),
    ({"type": "NodePort", "host": "h", "nodePort": 31000, "edgeNodePort": 31000},
     "spec.linkAccess.edgeNodePort"),
    ({"type": "LoadBalancer", "cost": "high"}, "spec.linkAccess.cost"),
])
def test_bad_link_access_is_refused_naming_the_field(access: Dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_mesh("demo", "messaging", spec(access))
    assert str(e.value).startswith(field), str(e.value)


def _grant(spec: Dict[str, Any], created: str = "2026-01-01T00:00:00Z") -> Dict[str, Any]:
    return {"metadata": {"name": "g", "namespace": "ns", "creationTimestamp": created}, "spec": spec}


def test_grant_defaults_and_windows() -> None:
    grant = parse_grant(_grant({"meshName": "demo"}))
    assert (grant.redemptions_allowed, grant.expiration_window, grant.role) == (
        1, dt.timedelta(minutes=15), "inter-router")
    assert parse_duration("1h30m", "w") == dt.timedelta(hours=1, minutes=30)
    assert parse_duration("2d", "w") == dt.timedelta(days=2)
    for bad in ("", "15", "1x", "31d", "0s", "m15"):
        with pytest.raises(SpecError):
            parse_duration(bad, "spec.expirationWindow")


@pytest.mark.parametrize("grant_spec,field", [
    ({}, "spec.meshName"),
    ({"meshName": "demo", "redemptionsAllowed": 0}, "spec.redemptionsAllowed"),
    ({"meshName": "demo", "redemptionsAllowed": 101}, "spec.redemptionsAllowed"),
    ({"meshName": "demo", "expirationWindow": "forever"}, "spec.expirationWindow"),
    ({"meshName": "demo", "role": "interior"}, "spec.role"),
])
def test_bad_grants_are_refused_naming_the_field(grant_spec: Dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_grant(_grant(grant_spec))
    assert str(e.value).startswith(field), str(e.value)


def test_ready_until_expired_or_exhausted() -> None:
    body = _grant({"meshName": "demo", "redemptionsAllowed": 2, "expirationWindow": "1h"})
    grant = parse_grant(body)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    assert redemption_state(grant, body, start + dt.timedelta(minutes=59))[:2] == (True, "Ready")
    assert redemption_state(grant, body, start + dt.timedelta(hours=1))[:2] == (False, "Expired")
    used = {**body, "status": {"redemptions": 2}}
    assert redemption_state(grant, used, start)[:2] == (False, "Exhausted")


def test_a_redemption_request_says_which_roles_its_side_makes() -> None:
    base = {"code": "c", "linkName": "l", "namespace": "ns", "meshName": "m"}
    assert RedeemRequest.from_json(base).roles == ("inter-router",)  # a side that does not say
    assert RedeemRequest.from_json({**base, "roles": ["edge", "edge"]}).roles == ("edge",)
    for bad in ([], ["interior"], "edge", [1]):
        with pytest.raises(WireError) as e:
            RedeemRequest.from_json({**base, "roles": bad})
        assert e.value.field == "roles", bad
