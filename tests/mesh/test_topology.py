"""Convergence of meshes of interior routers: every router lists every other router with a
next hop and cost of a shortest path (router.node, as qdstat -n shows it)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Dict, List

import pytest

from tests.mesh.conftest import FULL4, LINE3, RING5_CHORD, MeshFactory
from tests.mesh.meshproc import Edge
from tests.router.routerproc import router_env

# A-C direct but expensive; A-B-D-C cheap in total though longer in hops.
UNEQUAL: List[Edge] = [("C", "A", 10), ("B", "A", 1), ("D", "B", 1), ("D", "C", 1)]


@pytest.mark.parametrize("edges", [LINE3, RING5_CHORD, FULL4, UNEQUAL],
                         ids=["line3", "ring5-chord", "full4", "unequal-costs"])
def test_mesh_converges_to_shortest_paths(mesh_factory: MeshFactory, edges: List[Edge]) -> None:
    mesh = mesh_factory(edges)
    for rid in mesh.routers:
        ok, why = mesh.table_matches(rid, next_hops=True)
        assert ok, why


def qdstat(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qdrouter.tools.qdstat", *args], capture_output=True,
                          text=True, timeout=timeout, env=router_env(), stdin=subprocess.DEVNULL)


def test_qdstat_n_shows_cheapest_routes(mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(UNEQUAL)
    a = mesh["A"]
    out = qdstat("-b", f"127.0.0.1:{a.port}", "-n")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for rid in "BCD":
        assert rid in text, text
    js = qdstat("-b", f"127.0.0.1:{a.port}", "-n", "--json")
    assert js.returncode == 0, js.stderr
    print(text)
    print(js.stdout)
    rows = json.loads(js.stdout)
    rows = rows if isinstance(rows, list) else rows.get("rows", rows)
    assert rows, js.stdout
    # C is a neighbour of A, but the cheap way there is A-B-D-C (cost 3 < 10).
    c = mesh.nodes("A")["C"]
    assert c["cost"] == 3 and c["nextHop"] == "B", c
    # Each router's link state (its neighbours), and for A's own neighbours the control link
    # to them (an id qdstat -l lists); D is no neighbour of A.
    by_id = {row["router-id"]: row for row in rows}
    # (in any order: qdrouterd lists a link state's neighbours in its own order)
    assert {rid: sorted(by_id[rid]["neighbors"]) for rid in "BCD"} == {
        "B": ["A", "D"], "C": ["A", "D"], "D": ["B", "C"]}, by_id
    # As in qdrouterd, the router queried is listed too, its next hop "(self)", no link, and
    # its own neighbours; the rows are in router-id order.
    assert [row["router-id"] for row in rows] == ["A", "B", "C", "D"], rows
    assert by_id["A"] == {"router-id": "A", "next-hop": "(self)", "link": "-", "cost": "-",
                          "neighbors": ["B", "C"]}, by_id
    assert [line.split()[:3] for line in text.splitlines() if line.split()[:1] == ["A"]] == [
        ["A", "(self)", "-"]], text
    # Through A, B's table: B is the one marked.
    remote = qdstat("-b", f"127.0.0.1:{a.port}", "-r", "B", "-n", "--json")
    assert remote.returncode == 0, remote.stderr
    assert [row["router-id"] for row in json.loads(remote.stdout) if row["next-hop"] == "(self)"] == ["B"]
    assert by_id["D"]["link"] == "-" and by_id["B"]["link"] != "-" and by_id["C"]["link"] != "-", by_id


@pytest.mark.differs_from_c("qdstat -n's link column (router.node's routerLink): qdmesh gives the id of the "
                            "router-control link that qdstat -l lists; qdrouterd gives the inter-router "
                            "connection's mask bit (0, 1, ...), which no other view shows")
def test_qdstat_n_link_is_a_control_link_of_qdstat_l(mesh_factory: MeshFactory) -> None:
    a = mesh_factory(UNEQUAL)["A"]
    rows = json.loads(qdstat("-b", f"127.0.0.1:{a.port}", "-n", "--json").stdout)
    by_id = {row["router-id"]: row for row in rows}
    links = qdstat("-b", f"127.0.0.1:{a.port}", "-l", "--json")
    control_ids = {str(r["id"]) for r in json.loads(links.stdout) if r["type"] == "router-control"}
    assert {str(by_id["B"]["link"]), str(by_id["C"]["link"])} <= control_ids, (by_id, links.stdout)


def test_connector_only_cost_seen_by_both_ends(mesh_factory: MeshFactory) -> None:
    """The brief's config style: cost on the connector only.  Both ends must route with it,
    else the two directions of a link disagree (A->B cost 5, B->A cost 1)."""
    mesh = mesh_factory([("B", "A", 5)], converge=False)
    # Rewrite A's inter-router listener without a cost (default 1) and restart A.
    a = mesh["A"]
    a.inter_listeners["B"] = (a.inter_listeners["B"][0], 1)
    a.write_config()
    a.terminate()
    a.restart()
    mesh.wait_converged(timeout=15, routers=["B"])
    rows: Dict[str, Dict[str, object]] = {}
    end = time.monotonic() + 10
    while "B" not in rows and time.monotonic() < end:
        rows = mesh.nodes("A")
        time.sleep(0.2)
    assert rows.get("B", {}).get("cost") == 5, \
        f"A (listener, no cost) sees B at {rows.get('B')}; B's connector says cost 5"


def test_listener_only_cost_seen_by_both_ends(mesh_factory: MeshFactory) -> None:
    """The accepting side's cost: on the listener only.  The listener's end sends it in its
    open as the connector's end does, and both ends take the larger, so the router that
    connected routes with it too (as a cluster's link listener imposes its cost on links)."""
    mesh = mesh_factory([("B", "A", 5)], converge=False)
    # Rewrite B's connector without a cost (default 1) and restart B.
    b = mesh["B"]
    b.connectors["A"] = (*b.connectors["A"][:2], 1)
    b.write_config()
    b.terminate()
    b.restart()
    mesh.wait_converged(timeout=15, routers=["A"])
    rows: Dict[str, Dict[str, object]] = {}
    end = time.monotonic() + 10
    while rows.get("A", {}).get("cost") is None and time.monotonic() < end:
        rows = mesh.nodes("B")
        time.sleep(0.2)
    assert rows.get("A", {}).get("cost") == 5, \
        f"B (connector, no cost) sees A at {rows.get('A')}; A's listener says cost 5"
