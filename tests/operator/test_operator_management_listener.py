"""The operator manages routers through their management listener (port 55673 in a pod), not
the client listener: on REAL router processes configured with the sections the operator
renders, a vhost policy that refuses $management on the client listener does not lock the
operator out, and only holders of the mesh's certificate get in."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from qdmesh_operator.apply.management import ClientPool, tls_client
from qdmesh_operator.model.entities import Entity
from qdmesh_operator.render.conf import static_sections
from qdmesh_operator.tls import certs
from qdmesh_operator.tls.credentials import TlsFiles
from qdrouter.tools.errors import ManagementError
from qdrouter.tools.management_client import ManagementClient
from tests.operator.specs import mesh
from tests.operator.test_operator_managed_tls_mesh import Rendered, interior, routers, section, write_pair
from tests.router.routerproc import Router, free_port

__all__ = ["routers"]  # the fixture, shared with the Managed-TLS mesh tests

pytestmark = pytest.mark.timeout(120)

# $default refuses $management to every client of the client listener.
LOCKED_DOWN = """
policy {
    enableVhostPolicy: true
}
vhost {
    hostname: $default
    allowUnknownUser: true
    groups: {
        $default: {
            remoteHosts: *
            sources: news.*
            targets: news.*
        }
    }
}
"""


def management_listener(port: int) -> str:
    """The rendered management listener (on ``port``) and the vhost that polices its
    connections (route-container ones are policed, as qdrouterd polices them)."""
    sections = static_sections(mesh({"size": 2, "image": "qdmesh/router:0.1.0"}))
    (rendered,) = [e for e in sections if e.type == "listener" and e.name == "management"]
    assert rendered.attributes["role"] == "route-container" and rendered.attributes["requireSsl"] is True
    (vhost,) = [e for e in sections if e.type == "vhost" and e.name == rendered.attributes["policyVhost"]]
    return section(Entity("listener", "management", {**rendered.attributes, "host": "127.0.0.1",
                                                      "port": str(port)})) + section(vhost)


def test_operator_gets_in_where_policy_keeps_clients_out(tmp_path: Path, routers: List[Router]) -> None:
    rendered = Rendered()
    ca = certs.new_ca("demo inter-router CA")
    leaf = certs.issue_leaf(ca, "demo inter-router", dns_names=["localhost"])
    files = write_pair(tmp_path / "tls", leaf, ca.cert_pem)
    port = free_port()
    router = interior(tmp_path, "A", rendered.profile_with(files) + management_listener(port) + LOCKED_DOWN,
                      routers)

    # The client listener: $management refused by the vhost policy.
    with pytest.raises(ManagementError, match=r"targets do not allow '\$management'"):
        with ManagementClient(router.url) as client:
            client.query("router")

    # The management listener, as the operator reaches it (host name checked, EXTERNAL).
    tls = TlsFiles(files["certFile"], files["privateKeyFile"], files["caCertFile"], "v1")
    pool = ClientPool()
    try:
        rows = pool.get(f"amqps://localhost:{port}", tls).query("router")
        assert rows[0]["id"] == "A"
        connections = pool.get(f"amqps://localhost:{port}", tls).query("connection")
        (mine,) = [c for c in connections if c["role"] == "route-container"]
        assert mine["sasl"] == "EXTERNAL" and mine["isAuthenticated"]
        assert "CN=demo inter-router" in mine["user"]
    finally:
        pool.close()

    # No certificate, or one from another CA: refused.
    rogue_ca = certs.new_ca("demo inter-router CA")
    rogue = write_pair(tmp_path / "rogue",
                       certs.issue_leaf(rogue_ca, "demo inter-router", dns_names=["localhost"]), ca.cert_pem)
    url = f"amqps://localhost:{port}"
    stranger = TlsFiles(rogue["certFile"], rogue["privateKeyFile"], files["caCertFile"], "x")
    for client in (ManagementClient(url, timeout=3, ssl_trustfile=files["caCertFile"]),
                   tls_client(url, stranger)):
        with pytest.raises(ManagementError):
            with client:
                client.query("router")
