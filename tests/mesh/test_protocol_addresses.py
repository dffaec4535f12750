"""An interior router's routing-protocol addresses in router.address and qdstat -a, as
qdrouterd lists them: qdhello, qdrouter and qdrouter.ma, whose in-process endpoint is the
routing protocol (to-proc: control messages received, from-proc: sent), and one `router`
row per other router of the mesh."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any, Dict

import pytest

from tests.mesh.conftest import LINE3, MeshFactory
from tests.router.routerproc import router_env

ADDRESS = "org.apache.qpid.dispatch.router.address"


def rows_by_key(mesh: Any, rid: str) -> Dict[str, Dict[str, Any]]:
    return {row["key"]: row for row in mesh.mgmt(rid).query(ADDRESS)}


@pytest.mark.differs_from_c("qdrouterd counts a HELLO it sends as one delivery from its container however "
                            "many neighbours get it (3 in 2.5 s with two neighbours); qdmesh counts one per "
                            "neighbour")
def test_protocol_addresses_count_the_control_traffic(mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(LINE3)
    first = rows_by_key(mesh, "B")
    distributions = {key: first[key]["distribution"] for key in
                     ("Lqdhello", "Lqdrouter", "Tqdrouter", "Lqdrouter.ma", "Tqdrouter.ma")}
    assert distributions == {"Lqdhello": "flood", "Lqdrouter": "flood", "Tqdrouter": "flood",
                             "Lqdrouter.ma": "multicast", "Tqdrouter.ma": "multicast"}
    assert all(first[key]["inProcess"] == 1 for key in distributions)
    # B's topological protocol addresses reach the two other routers.
    assert first["Tqdrouter"]["remoteCount"] == 2 and first["Lqdrouter"]["remoteCount"] == 0
    # B hears HELLOs from its two neighbours and sends them its own, every second.
    time.sleep(2.5)
    later = rows_by_key(mesh, "B")
    hello_in = later["Lqdhello"]["deliveriesToContainer"] - first["Lqdhello"]["deliveriesToContainer"]
    hello_out = later["Lqdhello"]["deliveriesFromContainer"] - first["Lqdhello"]["deliveriesFromContainer"]
    assert hello_in >= 4 and hello_out >= 4, (hello_in, hello_out)
    # The link-state exchange that built the mesh: RAs and LSUs to every router, both ways.
    assert later["Tqdrouter"]["deliveriesFromContainer"] >= 1, later["Tqdrouter"]
    assert later["Tqdrouter"]["deliveriesToContainer"] >= 1, later["Tqdrouter"]


@pytest.mark.differs_from_c("qdrouterd still lists the router address of a router that left the mesh (RC) 15"
                            " s after it was killed; qdmesh drops it with the router")
def test_one_router_row_per_other_router(mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(LINE3)
    rows = rows_by_key(mesh, "A")
    routers = {key: (row["distribution"], row["inProcess"], row["remoteCount"])
               for key, row in rows.items() if key.startswith("R")}
    assert routers == {"RB": ("closest", 0, 1), "RC": ("closest", 0, 1)}, routers
    mesh.kill("C")
    deadline = time.monotonic() + 15
    while "RC" in rows_by_key(mesh, "A") and time.monotonic() < deadline:
        time.sleep(0.3)
    assert "RC" not in rows_by_key(mesh, "A"), "C's row stays once C is gone"


def test_qdstat_shows_the_protocol_rows(mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(LINE3)
    out = subprocess.run([sys.executable, "-m", "qdrouter.tools.qdstat", "-b", f"127.0.0.1:{mesh['A'].port}",
                          "-a"], capture_output=True, text=True, timeout=20, env=router_env(),
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    lines = [line.split() for line in out.stdout.splitlines()]
    cells = {(line[0], line[1]) for line in lines if len(line) > 2}
    assert {("local", "qdhello"), ("local", "qdrouter"), ("topo", "qdrouter"), ("local", "qdrouter.ma"),
            ("topo", "qdrouter.ma"), ("router", "B"), ("router", "C")} <= cells, out.stdout
