"""Configuring edges: mode edge and role edge from qdrouterd.conf, JSON and management
CREATE; roles where the mode cannot use them are refused with a message saying why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.edge.helpers import edge_connections, send_until_accepted, wait_edges
from tests.router.routerproc import Router, free_port, run_qdrouter


def test_json_config_edge_router(routers, net, tmp_path: Path):
    interior = routers.interior("I1")
    port = free_port()
    path = tmp_path / "E1j"
    path.mkdir()
    edge = Router(path, "E1")
    edge.port = port
    edge.ports = {"default": port}
    # Named .json: qdrouterd reads a config file as JSON only by that name (qdmesh by content).
    edge.config_path = path / "E1.json"
    edge.config_path.write_text(json.dumps([
        ["router", {"mode": "edge", "id": "E1"}],
        ["listener", {"host": "127.0.0.1", "port": port, "saslMechanisms": "ANONYMOUS"}],
        ["connector", {"host": "127.0.0.1", "port": interior.ports["edge"], "role": "edge"}],
    ]))
    routers.started.append(edge)
    edge.start()
    wait_edges(interior, 1)
    receiver = net.connect(interior.url).receiver("q1")
    sender = net.connect(edge.url).sender("q1")
    send_until_accepted(net, sender, "json")
    assert [r.message.body for r in receiver.received] == ["json"]


def test_edge_connector_created_through_management(routers, net):
    interior = routers.interior("I1")
    edge = routers.edge("E1", [])
    assert edge_connections(interior) == []
    with ManagementClient(edge.url) as client:
        client.create("connector", {"host": "127.0.0.1", "port": str(interior.ports["edge"]),
                                    "role": "edge"}, name="up")
    wait_edges(interior, 1)
    with ManagementClient(edge.url) as client:
        client.delete("connector", name="up")
    from tests.edge.helpers import wait_until
    wait_until(lambda: edge_connections(interior) == [], what="the edge connection to go")


def _refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.conf"
    path.write_text(text)
    done = run_qdrouter(["-c", str(path)])
    assert done.returncode != 0
    return done.stderr


@pytest.mark.qdmesh_only("qdmesh's config errors' words; qdrouterd 1.19 refuses the edge listener of a "
                         "standalone router too, with a traceback and its own words (role='standalone' "
                         "not allowed to connect to or accept connections from other routers)")
def test_roles_the_mode_cannot_use_are_refused(tmp_path: Path):
    err = _refused(tmp_path, "router {\n mode: standalone\n id: S\n}\n"
                             "listener {\n host: 127.0.0.1\n port: 0\n role: edge\n}\n")
    assert "'edge' needs router mode 'interior'" in err
    err = _refused(tmp_path, "router {\n mode: interior\n id: I\n}\n"
                             "connector {\n host: 127.0.0.1\n port: 1\n role: edge\n}\n")
    assert "'edge' needs router mode 'edge'" in err
    err = _refused(tmp_path, "router {\n mode: edge\n id: E\n}\n"
                             "listener {\n host: 127.0.0.1\n port: 0\n role: inter-router\n}\n")
    assert "needs router mode 'interior'" in err
