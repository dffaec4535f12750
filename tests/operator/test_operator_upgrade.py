"""Upgrading the operator alone does not roll the routers: a mesh that names no spec.image
keeps the image it was first rendered with (status.routerImage), and nothing else in the
routers' pod template depends on the operator's version (what only the config files carry,
such as the operator's management vhost, is in the ConfigMap, read at the next restart)."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from qdmesh_operator import contract
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.inputs import parse_inputs
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.render import manifests
from qdmesh_operator.render.conf import render_all
from qdmesh_operator.status.kstatus import Verdict, status_of
from tests.operator.specs import MESH_SPEC, routing

OWNER_UID = "0b7c6a52-1111-2222-3333-444455556666"


def _body(spec: Dict[str, Any], status: Dict[str, Any] | None = None) -> Dict[str, Any]:
    body: Dict[str, Any] = {"apiVersion": "qdmesh.io/v1alpha1", "kind": "RouterMesh",
                            "metadata": {"name": "demo", "namespace": "messaging", "uid": OWNER_UID,
                                         "generation": 3}, "spec": spec}
    if status is not None:
        body["status"] = status
    return body


def _rendered(body: Dict[str, Any]) -> Dict[str, Any]:
    """(the StatefulSet, the ConfigMap) as the operator renders them for ``body``."""
    parsed = parse_inputs(body, [])
    confs = render_all(mesh_state(parsed.mesh, routing()))
    carried = {"qdmesh.io/inter-router-cert": "c1", "qdmesh.io/mounted-secrets": "d1"}
    made = manifests.mesh_objects(parsed.mesh, confs, owner=parsed.owner, pod_annotations=carried)
    return {o["kind"]: o for o in made}


def _image(rendered: Dict[str, Any]) -> str:
    return str(rendered["StatefulSet"]["spec"]["template"]["spec"]["containers"][0]["image"])


@pytest.fixture
def version(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("QDMESH_ROUTER_IMAGE", raising=False)

    def run_as(v: str) -> None:
        monkeypatch.setattr(contract, "package_version", lambda: v)
    return run_as


def test_an_upgrade_renders_the_same_pod_template(version: Any) -> None:
    spec = {k: v for k, v in MESH_SPEC.items() if k != "image"}
    version("0.1.0")
    before = _rendered(_body(spec))
    assert _image(before) == "qdmesh/router:0.1.0"
    recorded = {"routerImage": "qdmesh/router:0.1.0"}  # what the status said after that render
    version("0.2.0")
    after = _rendered(_body(spec, recorded))
    assert after["StatefulSet"] == before["StatefulSet"]  # template, its hash, everything
    # A new mesh takes the new operator's image.
    assert _image(_rendered(_body(spec))) == "qdmesh/router:0.2.0"


def test_a_mesh_rendered_before_pinning_keeps_the_image_its_status_shows(version: Any) -> None:
    version("0.2.0")
    assert _image(_rendered(_body({}, {"image": "qdmesh/router:0.1.0"}))) == "qdmesh/router:0.1.0"


def test_only_spec_image_moves_a_pinned_mesh(version: Any) -> None:
    version("0.2.0")
    pinned = {"routerImage": "qdmesh/router:0.1.0"}
    moved = parse_inputs(_body({"image": "qdmesh/router:0.3.0"}, pinned), [])
    assert moved.mesh.image == "qdmesh/router:0.3.0"
    # spec.image removed again: the mesh stays on the image it runs (recorded as 0.3.0 by then).
    kept = parse_inputs(_body({}, {"routerImage": "qdmesh/router:0.3.0"}), [])
    assert kept.mesh.image == "qdmesh/router:0.3.0"


def test_a_status_that_does_not_restate_the_image_keeps_it() -> None:
    kept = status_of(Verdict.stalled("InvalidSpec", "spec.size: bad"), 4, {"routerImage": "r:1"})
    assert kept["routerImage"] == "r:1"


def test_a_new_management_vhost_changes_the_config_not_the_pod_template(
        version: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    version("0.1.0")
    before = _rendered(_body(MESH_SPEC))
    monkeypatch.setattr(contract, "MANAGEMENT_VHOST", "qdmesh-operator-management-v2")
    after = _rendered(_body(MESH_SPEC))
    assert after["ConfigMap"]["data"] != before["ConfigMap"]["data"]
    assert after["StatefulSet"] == before["StatefulSet"]


def test_the_restart_hash_running_meshes_carry_is_unchanged() -> None:
    """The routers' pod template carries this hash: an operator whose hash of the same spec
    differs (a field added to the hashed settings, another serialisation) would restart every
    router of every mesh when it is installed.  A new restart-only setting must leave the hash
    of meshes that do not set it as it was."""
    assert parse_mesh("m", "ns", {"image": "r:1"}).restart_hash() == "507f29275c56ea0b"
    assert parse_mesh("demo", "messaging", MESH_SPEC).restart_hash() == "4d2a75809091ab94"
