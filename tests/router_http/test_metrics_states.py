"""/metrics of real routers for what changes with the world around them: auto-link and
link-route states as their container comes and goes, routing-protocol state as a router of
the mesh goes away, and the process figures of the router's own process."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.mesh.meshproc import build_mesh, section, start_order
from tests.router.routerproc import RouterFactory, free_port

from .scrape import scrape, value


def test_autolink_and_link_route_states_follow_their_container(router_factory: RouterFactory) -> None:
    router = router_factory(
        router_id="Edge",
        extra_listeners={"http": {"http": "true"}, "container": {"role": "route-container"}},
        extra_config=section("autoLink", {"address": "queue.orders", "direction": "out",
                                          "containerId": "broker-1"})
        + section("linkRoute", {"prefix": "lr.", "direction": "in", "containerId": "broker-1"}))
    port = router.ports["http"]
    samples = scrape(port)
    assert value(samples, "qdmesh_autolinks", status="inactive") == 1
    assert value(samples, "qdmesh_autolinks", status="active") == 0
    assert value(samples, "qdmesh_link_routes", status="inactive") == 1
    assert value(samples, "qdmesh_link_routes", status="active") == 0
    # A router plays the broker: its container id is broker-1, and it accepts the auto-link's attach.
    broker = router_factory(router_id="broker-1", extra_config=section("connector", {
        "host": "127.0.0.1", "port": router.ports["container"], "role": "normal"}))
    deadline = time.monotonic() + 15
    while not (value(samples, "qdmesh_autolinks", status="active") == 1
               and value(samples, "qdmesh_link_routes", status="active") == 1):
        assert time.monotonic() < deadline, f"states never became active: {samples}"
        time.sleep(0.2)
        samples = scrape(port)
    assert value(samples, "qdmesh_autolinks", status="inactive") == 0
    assert value(samples, "qdmesh_link_routes", status="inactive") == 0
    assert value(samples, "qdmesh_connections", role="route-container") == 1
    broker.stop(check=True)
    broker.exit_expected = True  # stopped and checked by this test: the fixture only reaps it
    deadline = time.monotonic() + 15
    while value(samples, "qdmesh_link_routes", status="inactive") != 1:
        assert time.monotonic() < deadline, f"link route still active without its container: {samples}"
        time.sleep(0.2)
        samples = scrape(port)
    assert value(samples, "qdmesh_autolinks", status="active") == 0
    assert value(samples, "qdmesh_link_routes", status="active") == 0


def test_routing_state_follows_a_router_leaving_the_mesh(tmp_path: Path) -> None:
    edges = [("B", "A", 1), ("C", "B", 1)]  # a line A - B - C, B in the middle
    mesh = build_mesh(tmp_path, edges)
    b = mesh["B"]
    http_port = free_port()
    b.extra = section("listener", {"host": "127.0.0.1", "port": http_port, "http": "true"})
    b.write_config()
    try:
        for name in start_order(list(mesh.routers), edges):
            mesh[name].start()
        mesh.wait_converged(timeout=mesh.timers.convergence_bound + 10)
        before = scrape(http_port)
        assert value(before, "qdmesh_known_routers") == 2
        assert value(before, "qdmesh_neighbor_routers") == 2
        assert value(before, "qdmesh_connections", role="inter-router") == 2
        assert value(before, "qdmesh_routing_messages_received_total", opcode="HELLO") >= 2
        assert value(before, "qdmesh_routing_messages_received_total", opcode="LSU") \
            + value(before, "qdmesh_routing_messages_received_total", opcode="RA") >= 1
        changes = value(before, "qdmesh_topology_changes_total")
        assert changes >= 2  # A and C each became reachable
        mesh.kill("C")
        deadline = time.monotonic() + mesh.timers.convergence_bound + 5
        after = scrape(http_port)
        while value(after, "qdmesh_known_routers") != 1:
            assert time.monotonic() < deadline, "B's metrics still count C"
            time.sleep(0.2)
            after = scrape(http_port)
        assert value(after, "qdmesh_neighbor_routers") == 1
        assert value(after, "qdmesh_connections", role="inter-router") == 1
        assert value(after, "qdmesh_topology_changes_total") > changes
        # A still says hello every helloInterval: the counter keeps counting.
        hellos = value(after, "qdmesh_routing_messages_received_total", opcode="HELLO")
        deadline = time.monotonic() + 3 * mesh.timers.hello_interval + 2
        while value(scrape(http_port), "qdmesh_routing_messages_received_total", opcode="HELLO") <= hellos:
            assert time.monotonic() < deadline, "no HELLO from A counted"
            time.sleep(0.2)
    finally:
        mesh.close()
        for router in mesh.routers.values():
            if router.is_running():
                router.stop(check=True)


def test_process_figures_are_the_router_process(router_factory: RouterFactory) -> None:
    launched = time.time()
    router = router_factory(extra_listeners={"http": {"http": "true"}})
    assert router.proc is not None
    pid = router.proc.pid
    samples = scrape(router.ports["http"])
    started = value(samples, "qdmesh_process_start_time_seconds")
    assert launched - 1 <= started <= time.time()
    # The router's own CPU time (utime + stime in clock ticks, /proc/PID/stat fields 14 and 15).
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    assert 0 < value(samples, "qdmesh_process_cpu_seconds_total") <= cpu + 0.05
    assert value(samples, "qdmesh_process_cpu_seconds_total") >= cpu - 1.0
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    assert abs(value(samples, "qdmesh_process_open_fds") - fds) <= 3
