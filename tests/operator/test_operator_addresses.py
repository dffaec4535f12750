"""The RouterMesh's ``addressesWithConsumers``: how many addresses have a consumer somewhere in
the mesh, counted from ONE real router's address table (each interior router learns the
others' consumers through the routing protocol), with consumers on several routers of a
real local mesh."""

from __future__ import annotations

from typing import Dict, List

from qdmesh_operator.apply.addresses import count_consumed
from qdmesh_operator.apply.management import ClientPool, RouterOutcome
from tests.mesh.conftest import MeshFactory
from tests.mesh.meshproc import Mesh
from tests.mesh.traffic import wait_remote
from tests.router.amqpclient import Net
from tests.router.fixtures import net  # noqa: F401 (shared fixture)

LINE3 = [("B", "A", 1), ("C", "B", 1)]


def _outcomes(mesh: Mesh, names: List[str]) -> Dict[str, RouterOutcome]:
    return {n: RouterOutcome(n, mesh[n].url) for n in names}


def test_addresses_with_consumers_on_any_router_are_counted_from_one(
        mesh_factory: MeshFactory, net: Net) -> None:  # noqa: F811
    mesh = mesh_factory(LINE3)
    pool = ClientPool()
    try:
        before = count_consumed(_outcomes(mesh, ["A"]), pool=pool, tls=None)
        assert before is not None and before.count == 0 and before.router == "A"
        # A consumer on A, two on C (one address twice), none for an address only sent to.
        net.connect(mesh["A"].url).receiver("orders/eu", credit=10)
        on_c = net.connect(mesh["C"].url)
        on_c.receiver("orders/us", credit=10)
        on_c.receiver("orders/us", credit=10)
        on_c.receiver("audit", credit=10)
        net.connect(mesh["B"].url).sender("nobody/listens")
        for address in ("orders/us", "audit"):
            wait_remote(mesh, "A", address, 1, net=net)
        counted = count_consumed(_outcomes(mesh, ["A"]), pool=pool, tls=None)
        assert counted is not None and (counted.count, counted.truncated) == (3, False)
        # The same from another router, and the first that answers is the one read.
        wait_remote(mesh, "B", "orders/eu", 1, net=net)
        from_b = count_consumed({"B": RouterOutcome("B", mesh["B"].url),
                                 "A0": RouterOutcome("A0", "amqp://127.0.0.1:1", error="down")},
                                pool=pool, tls=None)
        assert from_b is not None and (from_b.count, from_b.router) == (3, "B")
    finally:
        pool.close()
    assert count_consumed({"A": RouterOutcome("A", "amqp://127.0.0.1:1", error="down")},
                          pool=ClientPool(), tls=None) is None
