"""Policy does not apply to inter-router connections (Qpid Dispatch 0.7 book, 2.6): a policed interior router
whose limits would refuse any more user connections still joins a mesh."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.policy.harness import refusal
from tests.policy.test_enforcement import ADMIN_VHOST
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, free_port


def interior(workdir: Path, router_id: str, body: str) -> Router:
    workdir.mkdir()
    router = Router(workdir, router_id=router_id)
    router.config_path.write_text(
        f"router {{\n    mode: interior\n    id: {router_id}\n}}\n"
        f"listener {{\n    host: 127.0.0.1\n    port: {router.port}\n"
        f"    saslMechanisms: ANONYMOUS\n}}\n" + body)
    return router


@pytest.mark.differs_from_c("over the global maxConnections qdrouterd closes the socket at once, before any "
                            "AMQP frame, so the client gets no error; qdmesh opens and closes with "
                            "amqp:resource-limit-exceeded naming maxConnections (docs/policy.md)")
def test_inter_router_connections_are_not_policed(tmp_path: Path, net: Net) -> None:
    mesh_port = free_port()
    policed = interior(tmp_path / "a", "A", (
        f"listener {{\n    host: 127.0.0.1\n    port: {mesh_port}\n    role: inter-router\n"
        f"    saslMechanisms: ANONYMOUS\n}}\n"
        "policy {\n    enableVhostPolicy: true\n    maxConnections: 2\n}\n" + ADMIN_VHOST))
    policed.ports["mesh"] = mesh_port
    peer = interior(tmp_path / "b", "B", (
        f"connector {{\n    host: 127.0.0.1\n    port: {mesh_port}\n    role: inter-router\n"
        f"    saslMechanisms: ANONYMOUS\n}}\n"))
    routers = [policed.start(), peer.start()]
    try:
        with ManagementClient(policed.url) as admin:
            deadline = time.monotonic() + 20
            while True:
                nodes = [row["id"] for row in admin.query("router.node")]
                if "B" in nodes or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert "B" in nodes, "the inter-router connection was refused"
            roles = sorted(row["role"] for row in admin.query("connection"))
            assert roles == ["inter-router", "normal"]
            stats = admin.query("vhostStats")
            assert [(row["hostname"], row["connectionsCurrent"]) for row in stats] == [("127.0.0.1", 1)]
            # User connections: the management client is one of 2 allowed; a user to an
            # unknown vhost is still refused by vhost policy.
            net.pump(0.3)
            assert "no vhost policy" in refusal(net, policed.url, None, "unknown.example")
    finally:
        for router in routers:
            router.stop(check=True)
