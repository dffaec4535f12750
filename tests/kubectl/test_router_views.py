"""kubectl-qdstat's router-facing part against a real local mesh of router processes: views
over every router with a router column, the general view side by side, and --map."""

from __future__ import annotations

import time
from typing import Dict

import pytest

from qdmesh_kubectl.views import query_routers
from qdrouter.tools import mesh_map
from qdrouter.tools.management_client import ManagementClient

from .localmesh import PODS, LocalMesh

pytestmark = pytest.mark.timeout(120)


def client_for(address: str) -> ManagementClient:
    return ManagementClient(address, timeout=5)


def test_every_router_answers_with_a_router_column(local_mesh: LocalMesh) -> None:
    result = query_routers("nodes", local_mesh.addresses, client_for)
    assert result.failures == {}
    assert result.table.heads[0] == "router"
    rows = {(r[0], r[1]): r for r in result.table.rows}
    # Each router lists itself (next hop "(self)", as qdrouterd's do) and the two others, at
    # their shortest-path costs (demo-1 <-> demo-2 goes through demo-0 at 1 + 1, not over
    # their own cost-4 link).
    assert set(rows) == {(a, b) for a in PODS for b in PODS}
    next_hop = result.table.heads.index("next-hop")
    assert all(rows[(pod, pod)][next_hop] == "(self)" for pod in PODS)
    cost = result.table.heads.index("cost")
    assert rows[("demo-1", "demo-2")][cost] == 2
    assert rows[("demo-0", "demo-2")][cost] == 1


def test_general_view_has_one_column_per_router(local_mesh: LocalMesh) -> None:
    result = query_routers("general", local_mesh.addresses, client_for)
    assert result.table.heads == ["attr", *PODS]
    by_label: Dict[str, list] = {row[0]: row[1:] for row in result.table.rows}
    assert by_label["Router Id"] == PODS
    assert by_label["Mode"] == ["interior"] * 3


def test_a_router_that_does_not_answer_is_reported_and_the_others_shown(local_mesh: LocalMesh) -> None:
    addresses = {**local_mesh.addresses, "demo-9": "127.0.0.1:1"}
    result = query_routers("linkroutes", addresses, client_for)
    assert "demo-9" in result.failures and "127.0.0.1:1" in result.failures["demo-9"]
    assert {row[0] for row in result.table.rows} == {"demo-0"}  # only demo-0 has link routes


def _snapshot(local_mesh: LocalMesh) -> mesh_map.MeshSnapshot:
    # The auto-links go active once the broker connection is up (connector retry: a few s).
    deadline = time.monotonic() + 30
    while True:
        snap = mesh_map.collect("demo", local_mesh.addresses, client_for)
        states = [a.get("operStatus") for s in snap.routers for a in s.auto_links]
        if (states and all(s == "active" for s in states)) or time.monotonic() > deadline:
            return snap
        time.sleep(0.5)


def test_map_draws_routers_links_costs_broker_and_routes(local_mesh: LocalMesh) -> None:
    snap = _snapshot(local_mesh)
    links = mesh_map.inter_router_links(snap)
    assert links == {("demo-0", "demo-1"): 1, ("demo-0", "demo-2"): 1, ("demo-1", "demo-2"): 4}
    text = mesh_map.render(snap)
    assert "RouterMesh demo: 3 of 3 routers answered" in text
    assert "demo-1 <-> demo-2  cost 4" in text
    # The matrix row of demo-1: no link to itself, cost 1 to demo-0, cost 4 to demo-2.
    lines = text.splitlines()
    matrix = lines[lines.index("Inter-router links (cost; '?' unknown, '.' no link)") + 1:][:4]
    row = next(line.split() for line in matrix if line.split()[:1] == ["demo-1"])
    assert row == ["demo-1", "1", "-", "4"]
    assert "demo-0 --> broker" in text and "connected" in text
    assert "private.  in  via connector broker  [demo-0: active" in text
    assert "orders  out  phase" in text and "demo-0: active" in text


def test_map_as_json(local_mesh: LocalMesh) -> None:
    data = mesh_map.as_json(_snapshot(local_mesh))
    assert [r["name"] for r in data["routers"]] == PODS
    assert {"routers": ["demo-1", "demo-2"], "cost": 4} in data["links"]
    assert {lr["direction"] for lr in data["linkRoutes"]} == {"in", "out"}
    assert all(al["state"]["demo-0"] == "active" for al in data["autoLinks"])
