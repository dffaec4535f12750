"""The operator's planner and applier driving a REAL local mesh of router processes through
AMQP management: changes applied to every router, drift repaired, router errors surfaced."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from qdmesh_operator.apply.management import sync_mesh
from qdmesh_operator.apply.plan import CREATE, DELETE, UPDATE
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.model.routing import parse_auto_link, parse_link_route, parse_vhost
from tests.mesh.conftest import FULL4, MeshFactory
from tests.operator.localmesh import local_state, names_on, rows_on, sync, urls
from tests.router.routerproc import Router, RouterFactory, free_port

pytestmark = pytest.mark.timeout(120)

LINE3 = [("B", "A", 1), ("C", "B", 1)]


def mesh_spec(broker_port: int, **extra: Any) -> Dict[str, Any]:
    return {
        "size": 3,
        "image": "qdmesh/router:0.1.0",
        "connectors": [{"name": "broker", "host": "127.0.0.1", "port": broker_port}],
        "addresses": [{"prefix": "queue/", "waypoint": True}],
        **extra,
    }


def routing(**changes: Any) -> List[Any]:
    lr = {"meshRef": "demo", "prefix": "orders.", "connection": "broker", **changes.get("lr", {})}
    al = {
        "meshRef": "demo",
        "address": "queue/q1",
        "direction": "out",
        "connection": "broker",
        **changes.get("al", {}),
    }
    vh = {
        "meshRef": "demo",
        "hostname": "tenant.example",
        "maxConnections": 10,
        "groups": {"admins": {"users": ["alice"], "remoteHosts": ["*"]}},
        **changes.get("vh", {}),
    }
    return [parse_link_route("orders", lr), parse_auto_link("q1-out", al), parse_vhost("tenant", vh)]


def wait_for(check: Any, timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_add_change_delete_reach_every_router(
    mesh_factory: MeshFactory, router_factory: RouterFactory
) -> None:
    broker = router_factory(router_id="broker")  # a plain router accepts the auto-link's attach
    local = mesh_factory(LINE3)
    mesh = parse_mesh("demo", "ns", mesh_spec(broker.port))

    outcomes = sync(local_state(mesh, routing()), local)
    for rid, outcome in outcomes.items():
        assert outcome.in_sync, (rid, outcome.error, [r.error for r in outcome.failures])
        assert sorted(r.op.action for r in outcome.results) == [CREATE] * 6
    for url in urls(local).values():
        assert names_on(url, "linkRoute") == ["qdmesh/linkRoute/orders-in", "qdmesh/linkRoute/orders-out"]
        assert names_on(url, "autoLink") == ["qdmesh/autoLink/q1-out"]
        assert "qdmesh/connector/broker" in names_on(url, "connector")
        assert "qdmesh/address/prefix:queue/" in names_on(url, "address")
        vhost = rows_on(url, "vhost")["qdmesh/vhost/tenant"]
        assert vhost["maxConnections"] == 10

    # The auto-links attach to the broker on every router, and their state is read back.
    def all_active() -> bool:
        rows = sync_mesh(local_state(mesh, routing()), urls(local))
        return all(o.live["autoLink"][0]["operStatus"] == "active" for o in rows.values())

    wait_for(all_active, what="auto-links active on every router")

    # A second pass finds nothing to do: the comparison understands the router's answers.
    assert all(o.results == [] for o in sync(local_state(mesh, routing()), local).values())

    # Change: a new prefix replaces the link routes, the vhost is updated in place.
    changed = routing(lr={"prefix": "invoices."}, vh={"maxConnections": 20})
    outcomes = sync(local_state(mesh, changed), local)
    for outcome in outcomes.values():
        assert outcome.in_sync, [r.error for r in outcome.failures]
        done = sorted((r.op.action, r.op.name) for r in outcome.results)
        assert done == sorted(
            [
                (DELETE, "qdmesh/linkRoute/orders-in"),
                (DELETE, "qdmesh/linkRoute/orders-out"),
                (CREATE, "qdmesh/linkRoute/orders-in"),
                (CREATE, "qdmesh/linkRoute/orders-out"),
                (UPDATE, "qdmesh/vhost/tenant"),
            ]
        )
    for url in urls(local).values():
        assert {
            r["prefix"] for r in rows_on(url, "linkRoute").values() if str(r["name"]).startswith("qdmesh/")
        } == {"invoices."}
        assert rows_on(url, "vhost")["qdmesh/vhost/tenant"]["maxConnections"] == 20

    # Delete: every owned entity goes; the local mesh's own connectors and listeners stay.
    before = {url: names_on(url, "connector") for url in urls(local).values()}
    empty = parse_mesh("demo", "ns", {"size": 3, "image": "qdmesh/router:0.1.0"})
    outcomes = sync(local_state(empty, []), local)
    assert all(o.in_sync for o in outcomes.values())
    for url in urls(local).values():
        assert names_on(url, "linkRoute") == [] and names_on(url, "autoLink") == []
        assert [n for n in names_on(url, "vhost") if n.startswith("qdmesh/")] == []
        assert names_on(url, "connector") == [n for n in before[url] if not n.startswith("qdmesh/")]
    local.wait_converged()  # the mesh itself was never disturbed


def test_auto_link_deleted_by_hand_with_qdmanage_comes_back(
    mesh_factory: MeshFactory, router_factory: RouterFactory
) -> None:
    broker = router_factory(router_id="broker")
    local = mesh_factory(LINE3)
    state = local_state(parse_mesh("demo", "ns", mesh_spec(broker.port)), routing())
    assert all(o.in_sync for o in sync(state, local).values())
    victim = urls(local)["demo-1"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "qdrouter.tools.qdmanage",
            "-b",
            victim,
            "delete",
            "--type=autoLink",
            "--name=qdmesh/autoLink/q1-out",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert names_on(victim, "autoLink") == []

    outcomes = sync(state, local)
    repaired = outcomes["demo-1"]
    assert [(r.op.action, r.op.name, r.op.reason) for r in repaired.results] == [
        (CREATE, "qdmesh/autoLink/q1-out", "missing")
    ]
    assert all(o.results == [] for rid, o in outcomes.items() if rid != "demo-1")
    assert names_on(victim, "autoLink") == ["qdmesh/autoLink/q1-out"]


def test_router_errors_are_reported_and_do_not_stop_other_changes(router_factory: RouterFactory) -> None:
    """A listener whose port is taken: the router's 400 is surfaced with its description;
    the rest of the plan is still applied; a router that does not answer is named."""
    routers = [router_factory(router_id=f"R{i}") for i in range(2)]
    taken = socket.socket()
    taken.bind(("0.0.0.0", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        mesh = parse_mesh(
            "demo",
            "ns",
            {
                "size": 3,
                "image": "qdmesh/router:0.1.0",
                "listeners": [{"name": "extra", "port": port}],
                "connectors": [{"name": "broker", "host": "127.0.0.1", "port": 1}],
            },
        )
        state = local_state(
            mesh, [parse_link_route("orders", {"meshRef": "demo", "prefix": "o.", "connection": "broker"})]
        )
        dead = f"amqp://127.0.0.1:{free_port()}"
        outcomes = sync_mesh(state, {"demo-0": routers[0].url, "demo-1": routers[1].url, "demo-2": dead})
    finally:
        taken.close()
    for rid in ("demo-0", "demo-1"):
        outcome = outcomes[rid]
        assert outcome.reachable and not outcome.in_sync
        (failure,) = outcome.failures
        assert failure.op.name == "qdmesh/listener/extra"
        assert "refused (400)" in str(failure.error) and "in use" in str(failure.error)
        assert len([r for r in outcome.results if r.ok]) == 3  # connector and both link routes
    assert not outcomes["demo-2"].reachable
    assert "demo-2" in str(outcomes["demo-2"].error) and "connection refused" in str(outcomes["demo-2"].error)


def test_listener_added_and_removed_at_run_time(router_factory: RouterFactory, tmp_path: Path) -> None:
    router = router_factory(router_id="R")
    port = free_port()
    with_listener = parse_mesh(
        "demo",
        "ns",
        {"size": 1, "image": "qdmesh/router:0.1.0", "listeners": [{"name": "extra", "port": port}]},
    )
    (outcome,) = sync_mesh(local_state(with_listener, []), {"demo-0": router.url}).values()
    assert outcome.in_sync and [r.op.action for r in outcome.results] == [CREATE]
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    without = parse_mesh("demo", "ns", {"size": 1, "image": "qdmesh/router:0.1.0"})
    (outcome,) = sync_mesh(local_state(without, []), {"demo-0": router.url}).values()
    assert outcome.in_sync and [r.op.action for r in outcome.results] == [DELETE]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    assert isinstance(router, Router)


def test_full_mesh_of_four_gets_the_same_routes_in_parallel(mesh_factory: MeshFactory) -> None:
    local = mesh_factory(FULL4)
    mesh = parse_mesh("demo", "ns", {"size": 4, "image": "qdmesh/router:0.1.0"})
    route = [
        parse_link_route(
            "r", {"meshRef": "demo", "pattern": "a/*/b", "containerId": "broker-1", "direction": "in"}
        )
    ]
    outcomes = sync(local_state(mesh, route), local)
    assert all(o.in_sync for o in outcomes.values())
    for url in urls(local).values():
        (only,) = [r for r in rows_on(url, "linkRoute").values()]
        assert (only["pattern"], only["direction"], only["containerId"]) == ("a/*/b", "in", "broker-1")
