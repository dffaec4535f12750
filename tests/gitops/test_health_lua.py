"""The Argo CD health checks (docs/examples/argocd) run by a real Lua 5.4 against sample statuses
of each kind, and the argocd-cm patch kept in step with them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from tests.prerequisites import require

from .lua import lua_binary, lua_literal, run_health

REPO = Path(__file__).resolve().parents[2]
ARGOCD = REPO / "docs" / "examples" / "argocd"
KINDS = ["RouterMesh", "LinkRoute", "AutoLink", "VhostPolicy"]
T = "2026-01-01T00:00:00Z"


@pytest.fixture(autouse=True)
def lua() -> None:
    require(lua_binary() is not None, "lua5.4 (apt-get install lua5.4; .ci/setup.d/30-helm-tools.sh)")


def script(kind: str) -> Path:
    return ARGOCD / "resource_customizations" / "qdmesh.io" / kind / "health.lua"


def cond(kind: str, status: str, reason: str = "", message: str = "") -> Dict[str, Any]:
    c = {"type": kind, "status": status, "lastTransitionTime": T}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def resource(kind: str, conditions: List[Dict[str, Any]] | None, generation: int = 2, observed: int = 2,
             **status: Any) -> Dict[str, Any]:
    obj: Dict[str, Any] = {"apiVersion": "qdmesh.io/v1alpha1", "kind": kind,
                           "metadata": {"name": "x", "namespace": "ns", "generation": generation},
                           "spec": {"size": 3} if kind == "RouterMesh" else {"meshRef": "m"}}
    if conditions is not None:
        obj["status"] = {"observedGeneration": observed, "conditions": conditions, **status}
    return obj


@pytest.mark.parametrize("kind", KINDS)
def test_ready_is_healthy(kind: str) -> None:
    obj = resource(kind, [cond("Ready", "True", "Reconciled", "applied on every router"),
                          cond("Reconciling", "False"), cond("Stalled", "False")])
    status, message = run_health(script(kind), obj)
    assert status == "Healthy"
    assert message.startswith("Reconciled: applied on every router")


@pytest.mark.parametrize("kind", KINDS)
def test_reconciling_is_progressing(kind: str) -> None:
    obj = resource(kind, [cond("Ready", "False", "Reconciling", "waiting"),
                          cond("Reconciling", "True", "RollingRouters", "rolling router 2 of 3"),
                          cond("Stalled", "False")])
    assert run_health(script(kind), obj)[0] == "Progressing"
    assert run_health(script(kind), obj)[1].startswith("RollingRouters: rolling router 2 of 3")


@pytest.mark.parametrize("kind", KINDS)
def test_stalled_is_degraded_with_the_operators_message(kind: str) -> None:
    obj = resource(kind, [cond("Ready", "False", "MeshNotFound", "RouterMesh 'm' does not exist"),
                          cond("Reconciling", "False"),
                          cond("Stalled", "True", "MeshNotFound", "RouterMesh 'm' does not exist")])
    assert run_health(script(kind), obj)[0] == "Degraded"
    assert run_health(script(kind), obj)[1].startswith("MeshNotFound: RouterMesh 'm' does not exist")


@pytest.mark.parametrize("kind", KINDS)
def test_no_status_yet_is_progressing(kind: str) -> None:
    assert run_health(script(kind), resource(kind, None)) == (
        "Progressing", "Waiting for the qdmesh operator to report status")


@pytest.mark.parametrize("kind", KINDS)
def test_the_crds_default_status_is_progressing(kind: str) -> None:
    """What the API server shows before the operator writes (the CRDs' status default)."""
    obj = resource(kind, None)
    obj["status"] = {"observedGeneration": 0}
    expected = ("Progressing", "Waiting for the qdmesh operator to report status")
    assert run_health(script(kind), obj) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_a_status_older_than_the_spec_is_progressing_even_if_it_said_ready(kind: str) -> None:
    obj = resource(kind, [cond("Ready", "True", "Reconciled", "ok")], generation=3, observed=2)
    expected = ("Progressing", "Waiting for the operator to reconcile generation 3")
    assert run_health(script(kind), obj) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_ready_false_without_stalled_is_progressing(kind: str) -> None:
    obj = resource(kind, [cond("Ready", "False", "RoutersNotReady")])
    assert run_health(script(kind), obj) == ("Progressing", "RoutersNotReady")


def test_router_mesh_message_counts_ready_routers() -> None:
    obj = resource("RouterMesh", [cond("Reconciling", "True", "ScalingUp", "adding router 3")],
                   readyRouters=2)
    expected = ("Progressing", "ScalingUp: adding router 3 (2/3 routers ready)")
    assert run_health(script("RouterMesh"), obj) == expected


def test_auto_link_message_names_the_routers_where_it_failed() -> None:
    obj = resource("AutoLink", [cond("Stalled", "True", "LinkFailed", "the broker refused the link")],
                   activeRouters=1, routers=[
                       {"name": "m-0", "operStatus": "active"},
                       {"name": "m-1", "operStatus": "failed", "lastError": "amqp:not-found: no queue"}])
    status, message = run_health(script("AutoLink"), obj)
    assert status == "Degraded"
    assert message == "LinkFailed: the broker refused the link (failed on m-1: amqp:not-found: no queue)"


def test_lua_literal_round_trips_awkward_strings() -> None:
    # Quotes, backslashes and newlines in an operator message must reach the script intact.
    text = 'say "hi"\\ \n next'
    obj = resource("LinkRoute", [cond("Ready", "True", "R", text)])
    assert lua_literal(text) == '"say \\"hi\\"\\\\ \\n next"'
    assert run_health(script("LinkRoute"), obj) == ("Healthy", f"R: {text}")


def test_argocd_cm_patch_carries_every_check_unchanged() -> None:
    spec = importlib.util.spec_from_file_location("render_argocd_cm", ARGOCD / "render_argocd_cm.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    on_disk = (ARGOCD / "argocd-cm-qdmesh.yaml").read_text()
    assert on_disk == module.render(), "run docs/examples/argocd/render_argocd_cm.py"
    data = yaml.safe_load(on_disk)["data"]
    for kind in KINDS:
        assert data[f"resource.customizations.health.qdmesh.io_{kind}"] == script(kind).read_text()
