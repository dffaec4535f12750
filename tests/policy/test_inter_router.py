"""Inter-router connections and policy, as qdrouterd 1.19: every connection a listener accepts,
inter-router ones included, counts against the policy's maxConnections (server.c), while vhost
rules hold only the others (policy.c). A router full of clients keeps a peer router out until
a client leaves."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List

from qdrouter.tools.management_client import ManagementClient
from tests.policy.test_enforcement import ADMIN_VHOST
from tests.router.amqpclient import Client, Net
from tests.router.routerproc import Router, free_port


def interior(workdir: Path, router_id: str, body: str) -> Router:
    workdir.mkdir()
    router = Router(workdir, router_id=router_id)
    router.config_path.write_text(
        f"router {{\n    mode: interior\n    id: {router_id}\n}}\n"
        f"listener {{\n    host: 127.0.0.1\n    port: {router.port}\n"
        f"    saslMechanisms: ANONYMOUS\n}}\n" + body)
    return router


def pair(tmp_path: Path, policy: str) -> tuple[Router, Router]:
    """Router A with an inter-router listener and ``policy``; router B, with a connector to it."""
    mesh_port = free_port()
    policed = interior(tmp_path / "a", "A", (
        f"listener {{\n    host: 127.0.0.1\n    port: {mesh_port}\n    role: inter-router\n"
        f"    saslMechanisms: ANONYMOUS\n}}\n" + policy))
    policed.ports["mesh"] = mesh_port
    peer = interior(tmp_path / "b", "B", (
        f"connector {{\n    host: 127.0.0.1\n    port: {mesh_port}\n    role: inter-router\n"
        f"    saslMechanisms: ANONYMOUS\n}}\n"))
    return policed, peer


def wait_for_node(admin: ManagementClient, node: str, timeout: float, net: Net | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if node in [row["id"] for row in admin.query("router.node")]:
            return
        assert time.monotonic() < deadline, f"router {node} did not join the mesh in {timeout} s"
        if net is not None:
            net.pump(0.2)  # the test's clients stay served meanwhile
        else:
            time.sleep(0.2)


def refused(net: Net, url: str) -> bool:
    """Whether a new connection is refused: qdrouterd drops the socket before any frame,
    qdmesh closes with amqp:resource-limit-exceeded; either way it does not stay open."""
    client = Client(net, url)
    net.clients.append(client)  # closed with the others at the end of the test
    try:
        net.wait(lambda: client.transport_closed or client.remote_closed, 10, "the refusal")
        return True
    except AssertionError:
        return False
    finally:
        client.close(wait=False)


def fill(net: Net, url: str, count: int, timeout: float = 30) -> List[Client]:
    """``count`` client connections that the router admitted. The router's start-up probe (a
    TCP connection opened and closed) holds a place until the router has seen it close, so a
    client refused meanwhile is replaced by another."""
    deadline = time.monotonic() + timeout
    clients: List[Client] = []
    while len(clients) < count:
        assert time.monotonic() < deadline, f"only {len(clients)} of {count} clients admitted"
        client = Client(net, url)
        net.clients.append(client)
        net.wait(lambda c=client: c.opened or c.transport_closed, 10, "a client's connection")
        net.pump(0.2)  # a refusal follows the open at once (qdmesh), or comes instead (qdrouterd)
        if client.alive:
            clients.append(client)
    return clients


def test_an_inter_router_connection_counts_against_max_connections_but_not_vhost_rules(
        tmp_path: Path, net: Net) -> None:
    # The vhost (hostname 127.0.0.1) knows only anonymous clients: an inter-router connection
    # held to it would be refused, and would count in its vhostStats.
    policed, peer = pair(tmp_path, "policy {\n    enableVhostPolicy: true\n    maxConnections: 3\n}\n"
                         + ADMIN_VHOST)
    routers = [policed.start(), peer.start()]
    try:
        with ManagementClient(policed.url) as admin:
            wait_for_node(admin, "B", 20)
            roles = sorted(row["role"] for row in admin.query("connection"))
            assert roles == ["inter-router", "normal"]
            # The inter-router connection and the management client's (once the router has
            # seen its start-up probe close).
            deadline = time.monotonic() + 20
            while admin.query("policy")[0]["connectionsCurrent"] != 2:
                assert time.monotonic() < deadline, admin.query("policy")
                time.sleep(0.2)
            stats = admin.query("vhostStats")
            assert [(row["hostname"], row["connectionsCurrent"]) for row in stats] == [("127.0.0.1", 1)]
            # One client more fills maxConnections (3); the next is refused.
            client = fill(net, policed.url, 1)[0]
            assert refused(net, policed.url)
            assert client.alive
            assert admin.query("policy")[0]["connectionsDenied"] >= 1
    finally:
        for router in routers:
            router.stop(check=True)


def test_a_peer_router_is_kept_out_while_clients_fill_max_connections(tmp_path: Path, net: Net) -> None:
    policed, peer = pair(tmp_path, "policy {\n    maxConnections: 2\n}\n")
    routers = [policed.start()]
    try:
        clients = fill(net, policed.url, 2)
        routers.append(peer.start())
        with ManagementClient(peer.url) as peer_admin:
            # B tries (its connector retries every few seconds) and is refused while A is full.
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                assert "A" not in [row["id"] for row in peer_admin.query("router.node")]
                net.pump(0.3)
            assert all(client.alive for client in clients)
            clients[0].close()
            # A client left: B's next attempt is admitted and the two routers meet.
            wait_for_node(peer_admin, "A", 30, net)
    finally:
        for router in routers:
            router.stop(check=True)
