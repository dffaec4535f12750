"""The live-change planner (pure): what it creates, replaces, updates and deletes, in which
order, and what it never touches."""

from __future__ import annotations

from typing import Any, Dict, List

from qdmesh_operator.apply.plan import CREATE, DELETE, UPDATE, difference, plan
from qdmesh_operator.model.entities import Entity


def row(name: str, **attrs: Any) -> Dict[str, Any]:
    return {"name": name, "identity": f"x/{name}", **attrs}


LR = Entity("linkRoute", "qdmesh/linkRoute/a-in", {"prefix": "a.", "direction": "in", "connection": "c"})
AL = Entity("autoLink", "qdmesh/autoLink/q", {"address": "q", "direction": "out", "connection": "c"})
CONN = Entity(
    "connector", "qdmesh/connector/c", {"host": "broker", "port": "5672", "role": "route-container"}
)


def actions(ops: List[Any]) -> List[str]:
    return [f"{op.action} {op.name}" for op in ops]


def test_nothing_to_do_when_live_matches_with_router_defaults_and_text_values() -> None:
    live = {
        "linkRoute": [
            row(
                LR.name,
                prefix="a.",
                direction="in",
                connection="c",
                distribution="linkBalanced",
                operStatus="active",
            )
        ],
        "connector": [row(CONN.name, host="broker", port="5672", role="route-container", cost=1)],
    }
    assert plan([LR, CONN], live) == []
    assert difference({"waypoint": True, "phase": 1}, {"waypoint": "yes", "phase": "1"}) is None


def test_missing_entities_are_created_connectors_before_routes() -> None:
    ops = plan([AL, LR, CONN], {})
    assert actions(ops) == [f"CREATE {CONN.name}", f"CREATE {LR.name}", f"CREATE {AL.name}"]
    assert ops[0].attributes == CONN.attributes


def test_changed_entities_without_update_are_replaced_and_the_reason_says_why() -> None:
    live = {"linkRoute": [row(LR.name, prefix="b.", direction="in", connection="c")]}
    ops = plan([LR], live)
    assert actions(ops) == [f"DELETE {LR.name}", f"CREATE {LR.name}"]
    assert "prefix is 'b.', want 'a.'" in ops[0].reason


def test_vhosts_are_updated_in_place_and_group_maps_compared_deeply() -> None:
    vhost = Entity("vhost", "qdmesh/vhost/t", {"hostname": "t", "groups": {"g": {"users": "a,b"}}})
    same = {
        "vhost": [
            row(
                vhost.name,
                hostname="t",
                maxConnections=65535,
                groups={"g": {"users": "a,b", "maxSenders": 2147483647}},
            )
        ]
    }
    assert plan([vhost], same) == []
    changed = {"vhost": [row(vhost.name, hostname="t", groups={"g": {"users": "a"}})]}
    (op,) = plan([vhost], changed)
    assert (op.action, op.reason) == (UPDATE, "groups.g.users is 'a', want 'a,b'")
    extra_group = {"vhost": [row(vhost.name, hostname="t", groups={"g": {"users": "a,b"}, "old": {}})]}
    (op,) = plan([vhost], extra_group)
    assert op.action == UPDATE and "'old'" in op.reason


def test_only_owned_entities_are_deleted_dependents_first() -> None:
    live = {
        "linkRoute": [
            row(LR.name, prefix="a.", direction="in", connection="c"),
            row("linkRoute/1", prefix="hand.", direction="in"),
        ],
        "connector": [
            row(CONN.name, host="broker", port="5672", role="route-container"),
            row("ir-to-B", host="b", port="1", role="inter-router"),
        ],
        "listener": [row("listener/1", port="5672"), row("amqp", port="5672")],
    }
    ops = plan([], live)
    assert actions(ops) == [f"DELETE {LR.name}", f"DELETE {CONN.name}"]
    assert all(op.action == DELETE and op.reason == "no longer wanted" for op in ops)


def test_entities_that_wait_for_a_restart_are_kept() -> None:
    live = {"listener": [row("qdmesh/listener/tls", port="5671")]}
    assert plan([], live, keep=["qdmesh/listener/tls"]) == []


def test_a_drifted_entity_is_recreated() -> None:
    """An auto-link deleted by hand is simply missing: the plan creates it again."""
    live = {"autoLink": []}
    (op,) = plan([AL], live)
    assert (op.action, op.name, op.reason) == (CREATE, AL.name, "missing")


def test_vhost_update_leaves_out_the_hostname_and_a_new_hostname_replaces_it() -> None:
    vhost = Entity("vhost", "qdmesh/vhost/t", {"hostname": "t", "maxConnections": 5})
    (op,) = plan([vhost], {"vhost": [row(vhost.name, hostname="t", maxConnections=10)]})
    assert (op.action, op.attributes) == (UPDATE, {"maxConnections": 5})
    ops = plan([vhost], {"vhost": [row(vhost.name, hostname="old", maxConnections=5)]})
    assert actions(ops) == [f"DELETE {vhost.name}", f"CREATE {vhost.name}"]
