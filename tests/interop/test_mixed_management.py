"""Management across a mixed mesh, both ways: a line Q1-C1-Q2-C2 of qdmesh and C routers,
asked with each kind of tool (qdmesh's qdstat/qdmanage and qdrouterd 1.19's qdstat-c and
qdmanage-c) through each kind of router: `qdstat -n` at every router, and `qdstat -r ROUTER -g`
and `qdmanage -r ROUTER query` from each end to every other router, across routers of both
kinds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator

import pytest

from tests.interop.mixed_topology import MixedMesh, line, running
from tests.interop.peers import table_rows, upstream_tool
from tests.router.routerproc import router_env

NAMES = ["Q1", "C1", "Q2", "C2"]
# Next hop of each router toward each other one on the line ("-": a neighbour, itself "(self)").
NEXT_HOPS: Dict[str, Dict[str, str]] = {
    "Q1": {"Q1": "(self)", "C1": "-", "Q2": "C1", "C2": "C1"},
    "C1": {"Q1": "-", "C1": "(self)", "Q2": "-", "C2": "Q2"},
    "Q2": {"Q1": "C1", "C1": "-", "Q2": "(self)", "C2": "-"},
    "C2": {"Q1": "Q2", "C1": "Q2", "Q2": "-", "C2": "(self)"},
}
TOOLS = ["qdmesh", "upstream"]


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedMesh]:
    workdir: Path = tmp_path_factory.mktemp("management")
    yield from running(MixedMesh(workdir, NAMES, line(NAMES)), "the line to converge")


def tool(kind: str, name: str, port: int, *args: str) -> subprocess.CompletedProcess:
    """Run ``name`` (qdstat or qdmanage) of qdmesh or of qdrouterd against 127.0.0.1:PORT."""
    if kind == "upstream":
        result = upstream_tool(name, port, *args)
    else:
        result = subprocess.run([sys.executable, "-m", f"qdrouter.tools.{name}", "-b", f"127.0.0.1:{port}",
                                 "--timeout", "10", *args], capture_output=True, text=True, timeout=30,
                                env=router_env(), stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"{kind} {name} {' '.join(args)}: {result.stderr[-2000:]}"
    return result


@pytest.mark.parametrize("kind", TOOLS)
def test_qdstat_n_at_each_router_lists_the_mesh_with_next_hops(mesh: MixedMesh, kind: str) -> None:
    for at in NAMES:
        rows = table_rows(tool(kind, "qdstat", mesh[at].port, "-n").stdout)
        assert {row[0]: row[1] for row in rows} == NEXT_HOPS[at], (kind, at, rows)


@pytest.mark.parametrize("kind", TOOLS)
def test_qdstat_r_reaches_every_router_through_the_other_kind(mesh: MixedMesh, kind: str) -> None:
    for at in ("Q1", "C2"):
        for target in (n for n in NAMES if n != at):
            rows = table_rows(tool(kind, "qdstat", mesh[at].port, "-r", target, "-g").stdout)
            assert ["Router Id", target] in rows, (kind, at, target, rows)


@pytest.mark.parametrize("kind", TOOLS)
def test_qdmanage_r_queries_every_router_through_the_other_kind(mesh: MixedMesh, kind: str) -> None:
    for at in ("Q1", "C2"):
        for target in (n for n in NAMES if n != at):
            out = tool(kind, "qdmanage", mesh[at].port, "-r", target,
                       "query", "--type", "router", "id", "mode")
            assert json.loads(out.stdout) == [{"id": target, "mode": "interior"}], (kind, at, target)
