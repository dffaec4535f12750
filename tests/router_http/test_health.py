"""/healthz and /readyz of real routers: standalone, and interior routers that must see the mesh."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.mesh.meshproc import build_mesh, section
from tests.router.routerproc import RouterFactory, free_port, run_qdrouter

from .scrape import get, scrape, value


def test_standalone_router_is_live_and_ready(router_factory: RouterFactory) -> None:
    router = router_factory(router_id="Solo", extra_listeners={"http": {"http": "true"}})
    status, text, _ = get(router.ports["http"], "/healthz")
    assert status == 200 and "Solo" in text
    status, text, _ = get(router.ports["http"], "/readyz")
    assert status == 200 and text.startswith("ready")


def test_interior_router_is_ready_once_it_sees_a_peer(tmp_path: Path) -> None:
    mesh = build_mesh(tmp_path, [("B", "A", 1)])
    b = mesh["B"]
    http_port = free_port()
    b.extra = section("listener", {"host": "127.0.0.1", "port": http_port, "http": "true"})
    b.write_config()
    b.ports["http"] = http_port
    try:
        b.start()
        # B's connector to A finds nobody: alive, but not ready.
        assert get(http_port, "/healthz")[0] == 200
        status, text, _ = get(http_port, "/readyz")
        assert status == 503, text
        assert "no other router" in text and "1 inter-router connectors" in text
        mesh["A"].start()
        deadline = time.monotonic() + mesh.timers.convergence_bound + 5
        while get(http_port, "/readyz")[0] != 200:
            assert time.monotonic() < deadline, "B never became ready after A started"
            time.sleep(0.2)
        samples = scrape(http_port)
        assert value(samples, "qdmesh_known_routers") == 1
        assert value(samples, "qdmesh_neighbor_routers") == 1
        assert value(samples, "qdmesh_connections", role="inter-router") == 1
        assert value(samples, "qdmesh_topology_changes_total") >= 1
        assert value(samples, "qdmesh_routing_messages_received_total", opcode="HELLO") >= 1
    finally:
        mesh.close()
        for router in mesh.routers.values():
            if router.is_running():
                router.stop(check=True)


def test_http_listener_on_a_busy_port_is_a_clear_startup_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        config = tmp_path / "busy.conf"
        config.write_text("router {\n    id: Busy\n}\nlistener {\n    name: metrics\n    host: 127.0.0.1\n"
                          f"    port: {port}\n    http: true\n}}\n")
        result = run_qdrouter(["-c", str(config)])
    assert result.returncode != 0
    assert "listener metrics: cannot listen on" in result.stderr
    assert "Traceback" not in result.stderr


def test_http_listener_created_and_deleted_through_management(router_factory: RouterFactory) -> None:
    router = router_factory(router_id="Managed")
    port = free_port()
    with ManagementClient(router.url, timeout=5) as client:
        client.create("listener", {"host": "127.0.0.1", "port": str(port), "http": True}, name="metrics")
        status, text, _ = get(port, "/healthz")
        assert status == 200 and "Managed" in text
        assert get(port, "/metrics")[0] == 200
        client.delete("listener", name="metrics")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
