"""A real mesh of three router processes whose router ids are pod names (demo-0..demo-2), plus a
standalone router standing in as a broker (a route container) for demo-0's link route and
auto-links."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator

from tests.mesh.meshproc import Mesh, build_mesh, start_order
from tests.router.routerproc import Router

MESH = "demo"
PODS = [f"{MESH}-{i}" for i in range(3)]
# demo-1 and demo-2 both reach demo-0 at cost 1; their own link costs 4.
EDGES = [(PODS[1], PODS[0], 1), (PODS[2], PODS[0], 1), (PODS[2], PODS[1], 4)]


@dataclass
class LocalMesh:
    mesh: Mesh
    broker: Router

    @property
    def addresses(self) -> Dict[str, str]:
        """Pod name -> host:port of its router's normal listener (what a port-forward gives)."""
        return {name: f"127.0.0.1:{router.port}" for name, router in self.mesh.routers.items()}


def broker_config(port: int) -> str:
    return (
        "connector {\n    name: broker\n    host: 127.0.0.1\n"
        f"    port: {port}\n    role: route-container\n    saslMechanisms: ANONYMOUS\n}}\n"
        "linkRoute {\n    prefix: private.\n    direction: in\n    connection: broker\n}\n"
        "linkRoute {\n    prefix: private.\n    direction: out\n    connection: broker\n}\n"
        "autoLink {\n    address: orders\n    direction: out\n    connection: broker\n}\n"
        "autoLink {\n    address: orders\n    direction: in\n    connection: broker\n}\n"
    )


def start_local_mesh(workdir: Path) -> Iterator[LocalMesh]:
    (workdir / "broker").mkdir()
    broker = Router(workdir / "broker", router_id="broker")
    broker.start()
    mesh = build_mesh(workdir, EDGES, names=PODS)
    mesh[PODS[0]].extra = broker_config(broker.port)
    mesh[PODS[0]].write_config()
    try:
        for name in start_order(list(mesh.routers), EDGES):
            mesh.routers[name].start()
        mesh.wait_converged(30)
        yield LocalMesh(mesh, broker)
    finally:
        mesh.close()  # closes its management clients; the routers are stopped here
        errors = []
        for router in [*mesh.routers.values(), broker]:
            try:
                router.stop(check=True)  # a router must exit cleanly on SIGTERM
            except AssertionError as e:
                errors.append(str(e))
        assert not errors, "\n".join(errors)
