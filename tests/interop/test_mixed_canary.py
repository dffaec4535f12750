"""Round-trip probes across a mixed line Q1-C1-Q2 (qdmesh, qdrouterd 1.19, qdmesh): the
qdmesh routers (canaryIntervalSeconds: 1) time GET-MGMT-NODES requests to their C neighbour,
which answers them as it answers qdstat's."""

from __future__ import annotations

import time
from typing import Dict, Iterator

import pytest

from tests.interop.mixed_topology import MixedMesh, line, query, running
from tests.mesh.meshproc import NODE_TYPE
from tests.mesh.test_canary import INTERVAL, CanaryTimers

NAMES = ["Q1", "C1", "Q2"]
COLUMNS = ["id", "nextHop", "roundTripSeconds", "roundTripAverageSeconds", "probeFailures"]


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedMesh]:
    built = MixedMesh(tmp_path_factory.mktemp("canary"), NAMES, line(NAMES))
    for name in ("Q1", "Q2"):
        built[name].timers = CanaryTimers(hello_max_age=3)
    yield from running(built, "the line to converge")


def rows(mesh: MixedMesh, at: str) -> Dict[str, Dict[str, object]]:
    return {str(row["id"]): row for row in query(mesh[at].url, NODE_TYPE, COLUMNS)}


def test_qdmesh_routers_time_their_c_neighbour(mesh: MixedMesh) -> None:
    for at in ("Q1", "Q2"):
        deadline = time.monotonic() + 30
        while True:
            row = rows(mesh, at)["C1"]
            if row.get("roundTripSeconds") is not None and row.get("probeFailures") == 0:
                break
            assert time.monotonic() < deadline, f"{at} has no round trip to C1: {row}\n{mesh.logs()}"
            time.sleep(0.2)
        assert 0 < float(str(row["roundTripSeconds"])) < INTERVAL, row
        # The router beyond the C one is not a neighbour: not probed.
        beyond = rows(mesh, at)["Q2" if at == "Q1" else "Q1"]
        assert beyond.get("roundTripSeconds") is None, beyond

