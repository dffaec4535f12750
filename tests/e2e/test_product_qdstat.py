"""``kubectl qdstat`` (the plugin's console script ``kubectl-qdstat``) against the shared mesh:
every view docs/kubectl-qdstat.md lists exits 0 and shows what the mesh really has: its
routers, their inter-router connections, the LinkRoute ``orders`` of the first file, and an
AutoLink and a VhostPolicy made here."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, List

import pytest

from tests.router.amqpclient import Net

from .kube import eventually
from .mesh_fixtures import MESH, MeshState
from .product import (
    create_resource,
    delete_resource,
    is_true,
    kubectl_binary,
    port_forwards,
    read_resource,
    run,
    status_summary,
)

AUTO_LINK_ADDRESS = "queue/qdstat"
VHOST = "qdstat.example.com"


def qdstat(mesh: MeshState, kubeconfig: Path, *args: str) -> str:
    env = dict(os.environ)
    env["PATH"] = f"{Path(kubectl_binary()).parent}{os.pathsep}{env.get('PATH', '')}"
    started = time.monotonic()
    out = run(["kubectl-qdstat", MESH, "-n", mesh.namespace, "--kubeconfig", str(kubeconfig), *args],
              timeout=120, env=env)
    print(f"$ kubectl qdstat {MESH} {' '.join(args)}   ({time.monotonic() - started:.1f} s)\n{out}")
    return out


def rows_of(out: str, router: str) -> List[str]:
    """Table lines whose first column is ``router``."""
    return [line for line in out.splitlines() if line.split()[:1] == [router]]


def wait_ready(k8s: Any, ns: str, plural: str, name: str) -> None:
    eventually(lambda: is_true(read_resource(k8s, ns, plural, name), "Ready"), 90, f"{plural}/{name} Ready",
               describe=lambda: status_summary(read_resource(k8s, ns, plural, name)))


@pytest.fixture(scope="module")
def routing(mesh: MeshState, k8s: Any) -> Iterator[None]:
    """An AutoLink and a VhostPolicy for the views to show (the LinkRoute ``orders`` is there
    already), live on every router before the views run."""
    mesh.require_ready()
    ns = mesh.namespace
    create_resource(k8s, ns, "autolinks", "AutoLink", "qdstat", {
        "meshRef": MESH, "address": AUTO_LINK_ADDRESS, "direction": "out", "containerId": "absent-broker"})
    create_resource(k8s, ns, "vhostpolicies", "VhostPolicy", "qdstat", {
        "meshRef": MESH, "hostname": VHOST, "maxConnections": 42,
        "groups": {"ops": {"users": ["olga"], "remoteHosts": ["*"], "maxSenders": 3}}})
    try:
        for plural, name in (("autolinks", "qdstat"), ("vhostpolicies", "qdstat"), ("linkroutes", "orders")):
            wait_ready(k8s, ns, plural, name)
        yield
    finally:
        delete_resource(k8s, ns, "autolinks", "qdstat")
        delete_resource(k8s, ns, "vhostpolicies", "qdstat")


def test_general_view_has_a_column_per_router(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    for args in ((), ("-g",)):
        out = qdstat(mesh, e2e_kubeconfig, *args)
        assert "Router Statistics" in out
        header = next(line for line in out.splitlines() if line.split()[:1] == ["attr"])
        assert header.split()[1:] == mesh.routers, header
        modes = next(line for line in out.splitlines() if line.split()[:1] == ["Mode"])
        assert modes.split()[1:] == ["interior"] * mesh.size, modes


def test_connections_view_shows_the_inter_router_connections(
        mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    out = qdstat(mesh, e2e_kubeconfig, "-c")
    # As qdstat -c: the connections, then (text output) each router's connectors.
    connections, _, connectors = out.partition("\nConnectors\n")
    for router in mesh.routers:
        # The role column (the operator's management connection, route-container, shows the
        # mesh's certificate, whose name also contains "inter-router").
        inter = [line for line in rows_of(connections, router) if "inter-router" in line.split()]
        assert len(inter) == mesh.size - 1, f"{router}: {len(inter)} inter-router connections\n{out}"
    dialled = [line for router in mesh.routers for line in rows_of(connectors, router)
               if "inter-router" in line.split()]
    assert dialled, f"no inter-router connector listed under the connections\n{out}"
    assert all("Operational" in line.split() for line in dialled), out


def test_links_view_shows_each_routers_links(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    out = qdstat(mesh, e2e_kubeconfig, "-l")
    for router in mesh.routers:
        rows = rows_of(out, router)
        assert any("router-control" in line for line in rows), f"{router} has no router-control link\n{out}"
        assert any("inter-router" in line for line in rows), f"{router} has no inter-router link\n{out}"


def test_addresses_view_shows_an_address_known_across_the_mesh(
        mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    """A receiver attached at the last router: every router lists its address, the last one
    with a local destination, the others with a remote one (learned through the mesh)."""
    probe, last = f"qdstat/{uuid.uuid4().hex[:8]}", mesh.routers[-1]
    with port_forwards(e2e_kubeconfig, mesh.namespace, [last]) as urls:
        net = Net()
        try:
            net.connect(f"amqp://{urls[last]}").receiver(probe, credit=1)
            out = ""

            def everywhere() -> bool:
                nonlocal out
                out = qdstat(mesh, e2e_kubeconfig, "-a")
                return all(any(probe in line.split() for line in rows_of(out, r)) for r in mesh.routers)

            eventually(everywhere, 60, f"address {probe} on every router (qdstat -a)", interval=2.0,
                       describe=lambda: out)
        finally:
            net.close()
    heads = next(line for line in out.splitlines() if line.split()[:1] == ["router"]).split()
    for router in mesh.routers:
        row = next(line.split() for line in rows_of(out, router) if probe in line.split())
        local, remote = int(row[heads.index("local")]), int(row[heads.index("remote")])
        assert (local, remote) == ((1, 0) if router == last else (0, 1)), f"{router}: {row}\n{out}"
    for router in mesh.routers:
        # qdrouterd's own rows: the agent's addresses; an interior router's protocol
        # addresses, and a row for each other router of the mesh.
        cells = {(line.split()[1], line.split()[2]) for line in rows_of(out, router) if len(line.split()) > 2}
        expected = {("local", "$_management_internal"), ("mobile", "$management"), ("local", "qdhello"),
                    ("topo", "qdrouter"), *(("router", other) for other in mesh.routers if other != router)}
        assert expected <= cells, f"{router}: {sorted(expected - cells)}\n{out}"


def test_nodes_view_shows_every_router(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    out = qdstat(mesh, e2e_kubeconfig, "--nodes")
    for router in mesh.routers:
        seen = {line.split()[1] for line in rows_of(out, router)}
        assert set(mesh.routers) - {router} <= seen, f"{router} sees {seen}\n{out}"
    nodes = json.loads(qdstat(mesh, e2e_kubeconfig, "--nodes", "--json"))
    print(nodes)


def test_autolinks_and_linkroutes_views(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    out = qdstat(mesh, e2e_kubeconfig, "--autolinks")
    for router in mesh.routers:
        rows = [line for line in rows_of(out, router) if AUTO_LINK_ADDRESS in line]
        assert len(rows) == 1 and " out " in f" {rows[0]} ", f"{router}: {rows}\n{out}"
    out = qdstat(mesh, e2e_kubeconfig, "--linkroutes")
    for router in mesh.routers:
        rows = [line for line in rows_of(out, router) if "orders." in line]
        assert sorted(d for line in rows for d in line.split() if d in ("in", "out")) == ["in", "out"], \
            f"{router}: {rows}\n{out}"


def test_vhost_views(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    out = qdstat(mesh, e2e_kubeconfig, "--vhosts")
    for router in mesh.routers:
        rows = [line for line in rows_of(out, router) if VHOST in line]
        assert len(rows) == 1 and "42" in rows[0].split(), f"{router}: {rows}\n{out}"
    out = qdstat(mesh, e2e_kubeconfig, "--vhostgroups")
    for router in mesh.routers:
        assert any(VHOST in line and "ops" in line.split() for line in rows_of(out, router)), \
            f"{router}\n{out}"


def test_memory_view(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    """The router (Python) has no allocator pools: the view answers on every router with qdstat's
    table and no rows (the command fails if any router does not answer)."""
    out = qdstat(mesh, e2e_kubeconfig, "-m")
    assert out.split()[:2] == ["Types", "router"], out


def test_map_draws_the_mesh(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    out = qdstat(mesh, e2e_kubeconfig, "--map")
    assert f"RouterMesh {MESH}: {mesh.size} of {mesh.size} routers answered" in out
    for router in mesh.routers:
        assert any(line.split()[:3] == [router, "mode", "interior"] for line in out.splitlines()), out
    pairs = [line for line in out.splitlines() if "<->" in line]
    assert len(pairs) == mesh.size * (mesh.size - 1) // 2, f"a full mesh has every pair linked\n{out}"
    routes = out.split("Link routes", 1)[-1]
    assert "orders." in routes and AUTO_LINK_ADDRESS in routes.split("Auto-links", 1)[-1], out


def test_one_router(mesh: MeshState, routing: None, e2e_kubeconfig: Path) -> None:
    out = qdstat(mesh, e2e_kubeconfig, "--nodes", "--router", "1")
    routers = {line.split()[0] for line in out.splitlines()
               if line.split()[:1] and line.split()[0] in mesh.routers}
    assert routers == {mesh.routers[1]}, out
