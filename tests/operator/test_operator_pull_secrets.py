"""spec.pod.imagePullSecrets: every pod that runs spec.image (the routers, the console, each edge
group's routers) pulls it with the named Secrets, so a private registry can be used."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.errors import SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.render import manifests
from qdmesh_operator.render.conf import render_all
from qdmesh_operator.render.edges import edge_objects
from tests.operator.specs import MESH_SPEC

SECRETS = [{"name": "registry-a"}, {"name": "registry.b"}]


def pod_specs(spec: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Each workload's pod spec, by kind and name."""
    mesh = parse_mesh("demo", "messaging", spec)
    made: List[Dict[str, Any]] = manifests.mesh_objects(mesh, render_all(mesh_state(mesh, [])), owner=None)
    made += edge_objects(mesh, None)
    return {f"{o['kind']}/{o['metadata']['name']}": o["spec"]["template"]["spec"]
            for o in made if o["kind"] in ("StatefulSet", "Deployment", "DaemonSet")}


def test_router_console_and_edge_pods_pull_with_the_secrets() -> None:
    spec = {**MESH_SPEC, "pod": {"imagePullSecrets": SECRETS}, "console": {"enabled": True},
            "edgeGroups": [{"name": "apps", "size": 2, "pod": {"imagePullSecrets": SECRETS[:1]}},
                           {"name": "nodes", "perNode": True}]}
    pods = pod_specs(spec)
    assert pods["StatefulSet/demo"]["imagePullSecrets"] == SECRETS
    assert pods["Deployment/demo-console"]["imagePullSecrets"] == SECRETS
    assert pods["Deployment/demo-edge-apps"]["imagePullSecrets"] == SECRETS[:1]
    # An edge group's pod settings are its own, as for every other pod setting.
    assert "imagePullSecrets" not in pods["DaemonSet/demo-edge-nodes"]


def test_without_secrets_the_pods_name_none() -> None:
    for name, pod in pod_specs({**MESH_SPEC, "console": {"enabled": True}}).items():
        assert "imagePullSecrets" not in pod, name


@pytest.mark.parametrize("secrets, field", [
    ([{"name": "Bad_Name"}], "spec.pod.imagePullSecrets[0].name"),
    ([{}], "spec.pod.imagePullSecrets[0].name"),
    ("registry", "spec.pod.imagePullSecrets"),
])
def test_a_bad_secret_is_refused_naming_the_field(secrets: Any, field: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_mesh("demo", "messaging", {**MESH_SPEC, "pod": {"imagePullSecrets": secrets}})
    assert field in str(caught.value)
