"""Status conditions in the kstatus shape: exactly one of Ready / Reconciling / Stalled is
True, observedGeneration on each, lastTransitionTime moves only on a change of status."""

from __future__ import annotations

from qdmesh_operator.status import Verdict
from qdmesh_operator.status import kstatus as status


def by_type(conditions: list) -> dict:
    return {c["type"]: c for c in conditions}


def test_each_verdict_sets_exactly_one_condition_true() -> None:
    for verdict, true in (
        (Verdict.ready("live"), "Ready"),
        (Verdict.progressing(status.ROUTERS_NOT_READY, "1/3 routers ready"), "Reconciling"),
        (Verdict.stalled(status.MESH_NOT_FOUND, "RouterMesh 'x' not found"), "Stalled"),
    ):
        conds = by_type(status.conditions(verdict, 4, when="2026-01-01T00:00:00Z"))
        assert {t for t, c in conds.items() if c["status"] == "True"} == {true}
        assert all(c["observedGeneration"] == 4 for c in conds.values())
        assert conds[true]["message"] == verdict.message and conds[true]["reason"] == verdict.reason


def test_transition_time_only_moves_when_status_changes() -> None:
    first = status.conditions(Verdict.progressing("RoutersNotReady", "0/3"), 1, when="T1")
    second = by_type(status.conditions(Verdict.progressing("RoutersNotReady", "2/3"), 1, first, when="T2"))
    assert second["Reconciling"]["lastTransitionTime"] == "T1"
    assert second["Reconciling"]["message"] == "2/3"
    third = by_type(status.conditions(Verdict.ready("ok"), 2, list(second.values()), when="T3"))
    assert third["Ready"]["lastTransitionTime"] == "T3" and third["Reconciling"]["lastTransitionTime"] == "T3"
    assert third["Stalled"]["lastTransitionTime"] == "T1"


def test_status_of_carries_generation_and_extras() -> None:
    st = status.status_of(Verdict.ready("ok"), 7, None, routers=[{"name": "m-0"}])
    assert st["observedGeneration"] == 7 and st["routers"] == [{"name": "m-0"}]
