"""Rolling restarts gated by the operator: one router at a time, the next only once the
restarted ones are ready on the new revision and the mesh has reconverged."""

from __future__ import annotations

from typing import Any, Dict, List

from qdmesh_operator.render import manifests
from qdmesh_operator.rolling import TEMPLATE_HASH, PodState, next_partition, template_hash
from tests.operator.specs import MESH_SPEC, mesh


def live(hash_: str, partition: int, update_revision: str = "new") -> Dict[str, Any]:
    return {
        "metadata": {"annotations": {TEMPLATE_HASH: hash_}},
        "spec": {"updateStrategy": {"rollingUpdate": {"partition": partition}}},
        "status": {"updateRevision": update_revision},
    }


def pods(*states: tuple) -> List[PodState]:
    return [PodState(i, rev, ready) for i, (rev, ready) in enumerate(states)]


def test_new_mesh_and_unchanged_template_do_not_roll() -> None:
    assert next_partition(3, "h1", live=None, pods=[], converged=False) == (0, "")
    unchanged = next_partition(3, "h1", live=live("h1", 0), pods=pods(("old", True)) * 3, converged=True)
    assert unchanged == (0, "")


def test_template_change_restarts_the_highest_router_first() -> None:
    partition, note = next_partition(
        3, "h2", live=live("h1", 0), pods=pods(("old", True), ("old", True), ("old", True)), converged=True
    )
    assert partition == 2 and "restarting router 2 first" in note


def test_next_router_waits_for_the_restarted_one_and_for_reconvergence() -> None:
    restarting = pods(("old", True), ("old", True), ("new", False))
    assert next_partition(3, "h2", live=live("h2", 2), pods=restarting, converged=True)[0] == 2
    back = pods(("old", True), ("old", True), ("new", True))
    held = next_partition(3, "h2", live=live("h2", 2), pods=back, converged=False)
    assert held == (2, "rolling restart held at router 2: waiting for the mesh to reconverge")
    assert next_partition(3, "h2", live=live("h2", 2), pods=back, converged=True)[0] == 1
    done = pods(("new", True), ("new", True), ("new", True))
    assert next_partition(3, "h2", live=live("h2", 1), pods=done, converged=True)[0] == 0


def test_a_second_change_mid_roll_starts_again_from_the_top() -> None:
    assert (
        next_partition(3, "h3", live=live("h2", 1), pods=pods(("old", True), ("new", True), ("new", True)),
                       converged=True)[0]
        == 2
    )


def test_the_rendered_stateful_set_carries_its_template_hash() -> None:
    m = mesh()
    (sts,) = [o for o in manifests.mesh_objects(m, {}, owner=None) if o["kind"] == "StatefulSet"]
    assert sts["metadata"]["annotations"][TEMPLATE_HASH] == template_hash(sts)
    other = manifests.with_template_hash(
        manifests.stateful_set(mesh({**MESH_SPEC, "image": "qdmesh/router:0.2.0"}), None)
    )
    assert other["metadata"]["annotations"][TEMPLATE_HASH] != sts["metadata"]["annotations"][TEMPLATE_HASH]
