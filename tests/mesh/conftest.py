"""Fixtures for mesh tests: several interior routers (real processes) wired from an edge list,
with tests/router's router process and AMQP client toolkit."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Sequence

import pytest

from tests.mesh.meshproc import Edge, Mesh, Timers, build_mesh, start_order
from tests.router.fixtures import net, stop_checked  # noqa: F401 (shared fixture)

MeshFactory = Callable[..., Mesh]
"""``mesh_factory(edges, timers=None, converge=True, extra=None, args=None) -> started (and
converged) Mesh``; ``extra`` maps router names to config sections added to their configs,
``args`` to command-line options added to their command lines."""

LINE3: List[Edge] = [("B", "A", 1), ("C", "B", 1)]
# A ring A-B-C-D-E-A with a chord B-E: two disjoint paths between most pairs.
RING5_CHORD: List[Edge] = [("B", "A", 1), ("C", "B", 1), ("D", "C", 1), ("E", "D", 1),
                           ("E", "A", 1), ("E", "B", 1)]
FULL4: List[Edge] = [(b, a, 1) for i, a in enumerate("ABCD") for b in "ABCD"[i + 1:]]


@pytest.fixture
def mesh_factory(tmp_path: Path) -> Iterator[MeshFactory]:
    """Build, start and wait for convergence of meshes; at teardown every router still up
    must exit 0 on SIGTERM without a traceback in its log."""
    meshes: List[Mesh] = []

    def make(edges: Sequence[Edge], timers: Timers | None = None, converge: bool = True,
             extra: Dict[str, str] | None = None, args: Dict[str, List[str]] | None = None) -> Mesh:
        mesh = build_mesh(tmp_path / f"mesh{len(meshes)}", edges, timers)
        for name, options in (args or {}).items():
            mesh.routers[name].args.extend(options)
        for name, config in (extra or {}).items():
            mesh.routers[name].extra = config
            mesh.routers[name].write_config()
        meshes.append(mesh)
        t0 = time.monotonic()
        for name in start_order(list(mesh.routers), edges):
            mesh.routers[name].start()
        if converge:
            started = time.monotonic() - t0
            took = mesh.wait_converged(timeout=mesh.timers.convergence_bound + started + 5)
            print(f"mesh {sorted(mesh.routers)} started in {started:.2f}s, converged {took:.2f}s later")
        return mesh

    yield make
    for mesh in meshes:
        mesh.close()
    stop_checked([r for mesh in meshes for r in mesh.routers.values()])
