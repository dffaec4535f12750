"""Management across edges: router.node lists interior routers only, an interior's
connections show its edges with role edge, qdstat --edge lists them, and an edge router's
agent answers through the network (qdstat/qdmanage -d EDGE, as qdrouterd's tools)."""

from __future__ import annotations

import subprocess
import sys

from tests.edge.helpers import query, wait_edges, wait_until
from tests.router.routerproc import router_env

NODE = "org.apache.qpid.dispatch.router.node"


def _tool(name: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", f"qdrouter.tools.{name}", *args], capture_output=True,
                          text=True, env=router_env(), timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_nodes_edges_and_remote_agents(routers):
    i1 = routers.interior("I1")
    i2 = routers.interior("I2", connect_to=[i1.ports["mesh"]])
    e1 = routers.edge("E1", [i1.ports["edge"]])
    routers.edge("E2", [i1.ports["edge"]])
    wait_edges(i1, 2)
    wait_until(lambda: {row["id"] for row in query(i2, NODE)} >= {"I1"}, what="I2 learns I1")
    assert {row["id"] for row in query(i1, NODE)} <= {"I1", "I2"}  # never an edge
    out = _tool("qdstat", "-b", i1.url, "--edge")
    lines = [line for line in out.splitlines() if " edge " in line]
    assert sorted(line.split()[2] for line in lines) == ["E1", "E2"]
    # an edge's own agent, through its interior router and through the other interior
    general = _tool("qdstat", "-b", i1.url, "-d", "E1", "-g")
    assert "E1" in general and "edge" in general
    wait_until(lambda: "E2" in _tool("qdstat", "-b", i2.url, "-d", "E2", "-g"), what="E2 through I2")
    conns = _tool("qdmanage", "-b", i2.url, "-d", "E1", "query", "--type", "connection")
    assert '"role": "edge"' in conns
    # and the other way: an interior router's agent from a client of an edge
    wait_until(lambda: "I2" in _tool("qdstat", "-b", e1.url, "-r", "I2", "-g"), what="I2 through E1")
    # the map shows each edge attached to its interior router
    drawn = _tool("qdstat", "-b", i2.url, "--map")
    assert "E1 --> I1" in drawn and "E2 --> I1" in drawn
    assert "E1" not in drawn.split("Edge routers")[0]  # not a router of the mesh


def test_console_draws_edges_at_their_interior():
    from qdrouter.console.snapshot import RouterData, _attachments
    data = RouterData("I1")
    data.rows["connections"] = [{"role": "edge", "dir": "in", "container": "E7", "host": "10.0.0.7:4000"}]
    assert _attachments({"I1": data}) == [
        {"router": "I1", "kind": "edge", "name": "E7", "host": "10.0.0.7:4000"}]
