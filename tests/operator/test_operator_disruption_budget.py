"""spec.disruptionBudget and spec.pod.terminationGracePeriodSeconds: what the routers'
PodDisruptionBudget and pods say, the model refusing bad values naming the field, and the
API server refusing them at admission (CEL) with the field named."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Tuple

import pytest

from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.errors import SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.render import manifests
from qdmesh_operator.render.conf import render_all
from qdmesh_operator.render.edges import edge_objects
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace

IMAGE = "qdmesh/router:0.1.0"


def _objects(spec: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    m = parse_mesh("demo", "ns", {"image": IMAGE, **spec})
    made = manifests.mesh_objects(m, render_all(mesh_state(m, [])), owner=None)
    return {o["kind"]: o for o in made}


def test_default_budget_evicts_one_router_at_a_time() -> None:
    pdb = _objects({})["PodDisruptionBudget"]["spec"]
    assert pdb == {"maxUnavailable": 1, "selector": {"matchLabels": {"qdmesh.io/mesh": "demo"}}}


@pytest.mark.parametrize("budget", [{"maxUnavailable": 2}, {"maxUnavailable": "34%"},
                                    {"minAvailable": 2}, {"minAvailable": "50%"}, {"maxUnavailable": 0}])
def test_budget_is_rendered_as_given_and_only_that_field(budget: Dict[str, Any]) -> None:
    pdb = _objects({"size": 5, "disruptionBudget": budget})["PodDisruptionBudget"]["spec"]
    assert {k: v for k, v in pdb.items() if k != "selector"} == budget


@pytest.mark.parametrize("budget, field", [
    ({"maxUnavailable": 1, "minAvailable": 1}, "spec.disruptionBudget"),
    ({}, None),  # an empty budget is the default one
    ({"maxUnavailable": "lots"}, "spec.disruptionBudget.maxUnavailable"),
    ({"minAvailable": "150%"}, "spec.disruptionBudget.minAvailable"),
    ({"minAvailable": -1}, "spec.disruptionBudget.minAvailable"),
])
def test_model_refuses_a_bad_budget_naming_the_field(budget: Dict[str, Any], field: str | None) -> None:
    if field is None:
        parsed = parse_mesh("m", "ns", {"image": IMAGE, "disruptionBudget": budget})
        assert parsed.disruption_budget.value == 1
        return
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", {"image": IMAGE, "disruptionBudget": budget})
    assert caught.value.field == field


@pytest.mark.parametrize("grace, drain", [(None, 20), (60, 50), (11, 1), (5, 1), (1, 1)])
def test_grace_period_reaches_the_pods_and_the_drain_timeout_fits_inside(
        grace: int | None, drain: int) -> None:
    pod = {} if grace is None else {"pod": {"terminationGracePeriodSeconds": grace}}
    sts = _objects(pod)["StatefulSet"]["spec"]["template"]["spec"]
    assert sts["terminationGracePeriodSeconds"] == (30 if grace is None else grace)
    assert manifests.drain_timeout(sts["terminationGracePeriodSeconds"]) == drain
    container = sts["containers"][0]
    # Through the environment, which an older router image ignores (it refuses an unknown
    # option); with the default grace period, nothing: the router's own default fits it.
    assert not any(a.startswith("--drain") for a in container["command"])
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env.get("QDMESH_DRAIN_TIMEOUT") == (None if grace is None else str(drain))


def test_edge_groups_take_their_own_grace_period() -> None:
    m = parse_mesh("demo", "ns", {"image": IMAGE, "edgeGroups": [
        {"name": "a", "size": 1, "pod": {"terminationGracePeriodSeconds": 45}}, {"name": "b", "size": 1}]})
    pods = {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in edge_objects(m, None)
            if o["kind"] == "Deployment"}
    assert pods["demo-edge-a"]["terminationGracePeriodSeconds"] == 45
    assert pods["demo-edge-a"]["containers"][0]["env"] == [{"name": "QDMESH_DRAIN_TIMEOUT", "value": "35"}]
    assert "env" not in pods["demo-edge-b"]["containers"][0]
    assert pods["demo-edge-b"]["terminationGracePeriodSeconds"] == 30


def test_grace_period_out_of_range_is_refused_naming_the_field() -> None:
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", {"image": IMAGE, "pod": {"terminationGracePeriodSeconds": 0}})
    assert caught.value.field == "spec.pod.terminationGracePeriodSeconds"


# -- admission, against a real API server ---------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(crds: ControlPlane) -> Tuple[Any, str]:
    return api_namespace(crds, "budget")


def _create(cluster: Tuple[Any, str], spec: Dict[str, Any]) -> Dict[str, Any]:
    from kubernetes import client

    api, ns = cluster
    body = {"apiVersion": f"{G}/{V}", "kind": "RouterMesh",
            "metadata": {"name": f"m-{uuid.uuid4().hex[:6]}"}, "spec": {"image": IMAGE, **spec}}
    custom = client.CustomObjectsApi(api)
    return dict(custom.create_namespaced_custom_object(G, V, ns, "routermeshes", body))


@pytest.mark.parametrize("spec, message", [
    ({"disruptionBudget": {"maxUnavailable": 1, "minAvailable": 2}},
     "spec.disruptionBudget: give exactly one of maxUnavailable or minAvailable"),
    ({"disruptionBudget": {}}, "spec.disruptionBudget: give exactly one of maxUnavailable or minAvailable"),
    ({"disruptionBudget": {"minAvailable": "half"}},
     "spec.disruptionBudget.minAvailable: a count of routers"),
    ({"disruptionBudget": {"maxUnavailable": -1}},
     "spec.disruptionBudget.maxUnavailable: a count of routers"),
    ({"pod": {"terminationGracePeriodSeconds": 0}}, "spec.pod.terminationGracePeriodSeconds"),
])
def test_admission_refuses_a_bad_budget_naming_the_field(cluster: Tuple[Any, str], spec: Dict[str, Any],
                                                         message: str) -> None:
    from kubernetes.client.rest import ApiException

    with pytest.raises(ApiException) as caught:
        _create(cluster, spec)
    assert caught.value.status == 422
    assert message in json.loads(caught.value.body)["message"]


@pytest.mark.parametrize("budget", [{"maxUnavailable": "25%"}, {"minAvailable": 2}])
def test_admission_takes_a_good_budget(cluster: Tuple[Any, str], budget: Dict[str, Any]) -> None:
    made = _create(cluster, {"disruptionBudget": budget})
    assert made["spec"]["disruptionBudget"] == budget
