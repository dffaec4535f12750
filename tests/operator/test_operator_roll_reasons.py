"""Why a rolling restart is due, named field by field (operations/reasons.py), and how a
roll waits for a maintenance window (rolling.py) and what the status and Events say then
(status/rolling.py).  Pure: pod templates rendered from specs, no API server."""

from __future__ import annotations

import copy
from typing import Any, Dict

from qdmesh_operator.apply.mesh import Applied
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.model.restart import restart_sections
from qdmesh_operator.operations.reasons import SECTION_REASONS, roll_reasons
from qdmesh_operator.render import manifests
from qdmesh_operator.rolling import PENDING, TEMPLATE_HASH, PodState, next_partition
from qdmesh_operator.status.rolling import (
    ROLLING_RESTART_PENDING,
    pending_condition,
    rolling_event,
    rolling_status,
)

BASE: Dict[str, Any] = {"size": 3, "image": "qdmesh/router:0.1.0"}


def _template(spec: Dict[str, Any], **kwargs: Any) -> Dict[str, Any]:
    m = parse_mesh("demo", "ns", {**BASE, **spec})
    return manifests.stateful_set(m, None, **kwargs)["spec"]["template"]


def _reasons(before: Dict[str, Any], after: Dict[str, Any], sections: bool = True, **kwargs: Any) -> list:
    old, new = parse_mesh("demo", "ns", {**BASE, **before}), parse_mesh("demo", "ns", {**BASE, **after})
    return roll_reasons(_template(before), _template(after, **kwargs),
                        previous_sections=restart_sections(old) if sections else None,
                        sections=restart_sections(new))


def test_each_pod_field_is_named() -> None:
    assert _reasons({}, {"image": "qdmesh/router:0.2.0"}) == ["spec.image changed"]
    limits = {"pod": {"resources": {"limits": {"memory": "1Gi"}}}}
    assert _reasons({}, limits) == ["spec.pod.resources changed"]
    assert _reasons({}, {"pod": {"nodeSelector": {"zone": "a"}}}) == ["spec.pod.nodeSelector changed"]
    assert _reasons({}, {"pod": {"terminationGracePeriodSeconds": 60}}) == [
        "spec.pod.terminationGracePeriodSeconds changed"]
    both = _reasons({}, {"image": "qdmesh/router:0.2.0", "pod": {"annotations": {"team": "a"}}})
    assert both == ["spec.image changed", "spec.pod.annotations changed"]


def test_a_new_listener_port_needs_a_restart() -> None:
    (reason,) = _reasons({}, {"listeners": [{"name": "edge", "port": 5673}]})
    assert reason.startswith("spec.listeners changed")


def test_restart_only_settings_name_their_section() -> None:
    assert _reasons({}, {"router": {"workerThreads": 8}}) == [SECTION_REASONS["router"]]
    assert _reasons({}, {"policy": {"maxConnections": 10}}) == [SECTION_REASONS["policy"]]
    tls = _reasons({}, {"interRouter": {"tls": {"mode": "Disabled"}}})
    assert SECTION_REASONS["interRouter.tls"] in tls
    assert "router.conf" not in " ".join(tls) and "qdrouterd.conf sections listener" in " ".join(tls)
    # A mesh whose status has no sections yet (rendered by an older operator): said in general.
    (general,) = _reasons({}, {"router": {"workerThreads": 8}}, sections=False)
    assert "spec.router, spec.policy or spec.interRouter.tls" in general


def test_what_the_operator_changes_is_named_too() -> None:
    assert _reasons({}, {}, restarted_at="2026-11-28T00:00:00Z") == [
        "manual rolling update requested (qdmesh.io/manual-rolling-update)"]
    (renewed,) = _reasons({}, {}, pod_annotations={"qdmesh.io/inter-router-cert": "abc"})
    assert renewed.startswith("the inter-router certificate revision in the pod template changed")
    (secret,) = _reasons({}, {}, pod_annotations={"qdmesh.io/mounted-secrets": "123"})
    assert secret.startswith("a SASL password the routers read when they start changed")


def test_a_change_nothing_names_still_says_the_template_changed() -> None:
    live = _template({})
    new = copy.deepcopy(live)
    new["spec"]["dnsPolicy"] = "None"
    sections = restart_sections(parse_mesh("demo", "ns", BASE))
    said = roll_reasons(live, new, previous_sections=sections, sections=sections)
    assert said == ["the pod template changed"]
    assert roll_reasons(None, new, previous_sections=None, sections=sections) == []


# -- maintenance windows --------------------------------------------------------------------------
def _live(hash_: str, partition: int) -> Dict[str, Any]:
    return {"metadata": {"annotations": {TEMPLATE_HASH: hash_}},
            "spec": {"updateStrategy": {"rollingUpdate": {"partition": partition}}},
            "status": {"updateRevision": "new"}}


OLD = [PodState(i, "old", True) for i in range(3)]


def test_a_due_roll_waits_for_a_window_then_starts_from_the_top() -> None:
    assert next_partition(3, "h2", live=_live("h1", 0), pods=OLD, converged=True,
                          window_open=False) == (3, PENDING)
    assert next_partition(3, "h2", live=_live("h2", 3), pods=OLD, converged=True,
                          window_open=False) == (3, PENDING)
    partition, note = next_partition(3, "h2", live=_live("h2", 3), pods=OLD, converged=True, window_open=True)
    assert partition == 2 and "restarting router 2 first" in note


def test_a_roll_under_way_goes_on_when_the_window_closes() -> None:
    pods = [PodState(0, "old", True), PodState(1, "old", True), PodState(2, "new", True)]
    assert next_partition(3, "h2", live=_live("h2", 2), pods=pods, converged=True, window_open=False)[0] == 1


def test_no_windows_rolls_at_once() -> None:
    assert next_partition(3, "h2", live=_live("h1", 0), pods=OLD, converged=True)[0] == 2


def test_pending_status_condition_and_one_event() -> None:
    fresh = Applied(rolling=PENDING, roll_reasons=["spec.image changed"])
    status = rolling_status({}, fresh)
    assert status == {"state": "Pending", "reasons": ["spec.image changed"], "message": PENDING}
    condition = pending_condition({}, fresh, ["* 0-1 * * SAT,SUN"], 3)
    assert condition is not None and condition["type"] == ROLLING_RESTART_PENDING
    assert "'* 0-1 * * SAT,SUN'" in condition["message"] and "spec.image changed" in condition["message"]
    body = {"kind": "RouterMesh", "metadata": {"name": "m"}, "status": {"rollingRestart": status}}
    event = rolling_event(body, fresh)
    assert event is not None and event.message == f"{PENDING}: spec.image changed"
    still = Applied(rolling=PENDING)  # later checks: the reasons kept, no second Event
    assert rolling_status({"rollingRestart": status}, still) == status
    assert rolling_event(body, still) is None
    assert rolling_status({"rollingRestart": status}, Applied()) is None


def test_each_roll_step_event_says_why() -> None:
    body = {"kind": "RouterMesh", "metadata": {"name": "m"},
            "status": {"rollingRestart": {"reasons": ["spec.pod.resources changed"]}}}
    step = Applied(rolling="router 2 is back and the mesh has reconverged: restarting router 1")
    event = rolling_event(body, step)
    assert event is not None and event.message.endswith(": spec.pod.resources changed")


def test_a_change_while_a_roll_waits_adds_its_reason() -> None:
    waiting = {"rollingRestart": {"state": "Pending", "reasons": ["spec.image changed"]}}
    again = Applied(rolling=PENDING, roll_reasons=["spec.pod.resources changed"])
    assert rolling_status(waiting, again)["reasons"] == ["spec.image changed", "spec.pod.resources changed"]
    same = Applied(rolling=PENDING, roll_reasons=["spec.image changed"])
    assert rolling_status(waiting, same)["reasons"] == ["spec.image changed"]


def test_a_pending_roll_stays_pending_when_the_mesh_grows_past_its_partition() -> None:
    grown = _live("h2", 3)
    grown["metadata"]["annotations"]["qdmesh.io/rolling-restart-pending"] = "true"
    pods = [*OLD, PodState(3, "new", True), PodState(4, "new", True)]
    assert next_partition(5, "h2", live=grown, pods=pods, converged=True, window_open=False) == (5, PENDING)
    assert next_partition(5, "h2", live=grown, pods=pods, converged=True, window_open=True)[0] == 4
