"""Managing a remote router through the mesh: _topo/0/<id>/$management, qdstat -r,
GET-MGMT-NODES."""

from __future__ import annotations

import subprocess
import sys

from qdrouter.tools.management_client import ManagementClient
from tests.mesh.conftest import LINE3, MeshFactory
from tests.router.routerproc import router_env

ROUTER = "org.apache.qpid.dispatch.router"


def tool(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"qdrouter.tools.{module}", *args], capture_output=True,
                          text=True, timeout=20, env=router_env(), stdin=subprocess.DEVNULL)


def test_query_remote_router_entity_via_topo_address(mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(LINE3)
    with ManagementClient(mesh["A"].url, router="C", timeout=5) as client:
        assert client.address == "_topo/0/C/$management"
        rows = client.query(ROUTER)
    assert [r["id"] for r in rows] == ["C"], rows
    assert rows[0]["mode"] == "interior"
    with ManagementClient(mesh["A"].url, router="C", timeout=5) as client:
        nodes = {r["id"]: r for r in client.query("org.apache.qpid.dispatch.router.node")}
    assert sorted(nodes) == ["A", "B", "C"], "C's own router.node table, read from A"
    # C lists itself, as qdrouterd does: next hop "(self)".
    assert nodes["C"]["nextHop"] == "(self)" and nodes["A"]["nextHop"] == "B", nodes


def test_qdstat_and_qdmanage_with_router_option(mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(LINE3)
    bus = f"127.0.0.1:{mesh['A'].port}"
    out = tool("qdstat", "-b", bus, "-r", "C", "-g")
    assert out.returncode == 0, out.stderr
    print(out.stdout)
    assert "C" in out.stdout and "interior" in out.stdout, out.stdout
    out = tool("qdmanage", "-b", bus, "-r", "C", "query", "--type", "router.node")
    assert out.returncode == 0, out.stderr
    assert '"A"' in out.stdout and '"B"' in out.stdout, out.stdout
    out = tool("qdstat", "-b", bus, "-r", "B", "-n")
    assert out.returncode == 0, out.stderr


def test_get_mgmt_nodes_lists_every_router(mesh_factory: MeshFactory) -> None:
    """Every router of the mesh, the one asked included, as qdrouterd answers."""
    mesh = mesh_factory(LINE3)
    with ManagementClient(mesh["A"].url, timeout=5) as client:
        nodes = sorted(str(n) for n in client.get_mgmt_nodes())
    print(nodes)
    assert nodes == ["amqp:/_topo/0/A/$management", "amqp:/_topo/0/B/$management",
                     "amqp:/_topo/0/C/$management"], nodes
