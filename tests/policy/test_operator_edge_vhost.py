"""Edge routers keep working in a policed mesh: interior routers police their edges'
connections as user connections (as qdrouterd does), so the operator renders the edge
listener with a vhost of its own (contract.EDGE_VHOST) that lets an edge do what it does.
On real router processes: an interior with the rendered edge listener and vhost, and a
vhost policy that restricts its clients, serves an edge router and its clients."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from qdmesh_operator import contract
from qdmesh_operator.desired.state import edge_listener, edge_vhost
from tests.edge.edgeproc import Routers, interior
from tests.edge.helpers import send_until_accepted, wait_edges
from tests.operator.specs import mesh
from tests.operator.test_operator_managed_tls_mesh import section
from tests.policy.test_enforcement import ADMIN_VHOST
from tests.router.amqpclient import Net
from tests.router.fixtures import stop_checked

pytestmark = pytest.mark.timeout(120)

# Clients of the interior may use news.* only (the test's management client connects to the
# vhost 127.0.0.1: ADMIN_VHOST).
POLICED = """
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


@pytest.fixture
def routers(tmp_path: Path) -> Iterator[Routers]:
    made = Routers(tmp_path)
    yield made
    stop_checked(made.started)


@pytest.mark.qdmesh_only("the operator renders config files for qdmesh routers: qdrouterd's parser does not "
                         "read a vhost's groups map in the one-line form the renderer writes")
def test_edges_attach_and_carry_messages_in_a_policed_mesh(routers: Routers, net: Net) -> None:
    spec = mesh({"size": 1, "image": "qdmesh/router:0.1.0"})
    rendered_listener = edge_listener(spec)
    assert rendered_listener.attributes["policyVhost"] == contract.EDGE_VHOST
    vhost = edge_vhost()
    assert vhost.attributes["hostname"] == contract.EDGE_VHOST
    workdir = routers.tmp_path / "I1"
    workdir.mkdir()
    inner = interior(workdir, "I1", extra=POLICED + ADMIN_VHOST + section(vhost))
    text = inner.config_path.read_text()
    inner.config_path.write_text(text.replace("    role: edge\n",
                                              f"    role: edge\n    policyVhost: {contract.EDGE_VHOST}\n"))
    routers.started.append(inner)
    inner.start()
    outer = routers.edge("E1", [inner.ports["edge"]])
    wait_edges(inner, 1)
    news = net.connect(inner.url).receiver("news.today")
    send_until_accepted(net, net.connect(outer.url).sender("news.today"), "through the edge")
    net.wait(lambda: len(news.received) == 1, 10, "the message through the edge")
