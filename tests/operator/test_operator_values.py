"""Values the schema types only as strings or free-form objects (model/values.py): an image
needs a tag or a digest, resource quantities must parse; the error names the field.  A
RouterMesh stuck on one is Stalled/InvalidSpec, and the Warning is posted once, not at every
drift check (status/mesh.py)."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from qdmesh_operator.model.errors import SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.status.mesh import refused_report, stalled_report

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize("image", [
    "qdmesh/router:1.2.3", "registry.example:5000/qdmesh/router:1.2", f"qdmesh/router@{DIGEST}",
    f"qdmesh/router:1.2@{DIGEST}", "router:v1_rc-2"])
def test_tagged_or_digested_images_pass(image: str) -> None:
    assert parse_mesh("m", "ns", {"image": image}).image == image


@pytest.mark.parametrize(("image", "problem"), [
    ("qdmesh/router", "'qdmesh/router' has no tag"),
    ("registry.example:5000/qdmesh/router", "has no tag"),
    ("qdmesh/router:latest", "not the 'latest' tag"),
])
def test_untagged_images_are_refused_naming_the_field(image: str, problem: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", {"image": image})
    assert caught.value.field == "spec.image" and problem in caught.value.problem


def test_resource_quantities_must_parse() -> None:
    good = {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": 2, "memory": "1Gi"}}
    assert parse_mesh("m", "ns", {"pod": {"resources": good}}).pod.resources == good
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", {"pod": {"resources": {"requests": {"cpu": "lots"}}}})
    assert str(caught.value).startswith("spec.pod.resources.requests.cpu: 'lots' is not a quantity")
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", {"edgeGroups": [{"name": "e", "size": 1,
                                               "pod": {"resources": {"limits": {"memory": "big"}}}}]})
    assert caught.value.field == "spec.edgeGroups[0].pod.resources.limits.memory"
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", {"console": {"enabled": True, "resources": {"limits": {"cpu": True}}}})
    assert caught.value.field == "spec.console.resources.limits.cpu"


def _body(status: Dict[str, Any] | None = None) -> Dict[str, Any]:
    return {"apiVersion": "qdmesh.io/v1alpha1", "kind": "RouterMesh",
            "metadata": {"name": "m", "namespace": "ns", "generation": 2}, "status": status or {}}


def test_a_spec_that_stays_invalid_is_announced_once() -> None:
    message = "spec.pod.resources.requests.cpu: 'lots' is not a quantity"
    first = stalled_report(_body(), message, event=message)
    assert [(e.type, e.reason) for e in first.events] == [("Warning", "InvalidSpec")]
    status = first.statuses[("routermeshes", "m")]
    stalled = next(c for c in status["conditions"] if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"], stalled["message"]) == ("True", "InvalidSpec", message)
    # The next drift check finds the same: status again, no Event.
    again = stalled_report(_body(status), message, event=message)
    assert again.events == [] and again.statuses[("routermeshes", "m")]["conditions"][2]["status"] == "True"
    # Another problem is news.
    other = stalled_report(_body(status), "spec.image: 'x' has no tag", event="spec.image: 'x' has no tag")
    assert [e.reason for e in other.events] == ["InvalidSpec"]


def test_a_write_refused_for_good_is_announced_once() -> None:
    from kubernetes.client.rest import ApiException

    from qdmesh_operator.kube.api import KubeRefused

    error = ApiException(status=422, reason="Unprocessable Entity")
    error.body = '{"message": "StatefulSet.apps \\"m\\" is invalid: spec.template...: quantities must match"}'
    first = refused_report(_body(), KubeRefused("StatefulSet", error))
    assert [(e.type, e.reason) for e in first.events] == [("Warning", "ApplyFailed")]
    again = refused_report(_body(first.statuses[("routermeshes", "m")]), KubeRefused("StatefulSet", error))
    assert again.events == []


@pytest.mark.parametrize("value, ok", [
    ("500m", True), ("2", True), (2, True), (0.5, True), ("256Mi", True), ("1Gi", True),
    ("1e3", True), ("1.5", True), (".5", True), ("100k", True), ("lots", False), ("1 Gi", False),
    ("1GB", False), ("", False), ("Mi", False), (True, False), (None, False), ("1Gix", False),
])
def test_quantity_syntax_is_kubernetes(value: Any, ok: bool) -> None:
    """The model's check agrees with the Kubernetes client's parser on each of these, but
    for a space inside ("1 Gi"), which the client's parser skips and the API server refuses."""
    from kubernetes.utils import parse_quantity

    from qdmesh_operator.model.values import is_quantity
    assert is_quantity(value) is ok
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and " " not in str(value):
        try:
            parse_quantity(value)
            parsed = True
        except (ValueError, ArithmeticError):
            parsed = False
        assert parsed is ok
