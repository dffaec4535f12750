"""Which way a routed attach goes in a mesh with a choice: along the cheapest path (not the
fewest hops), and to the nearest router that has a destination, also when that destination
is added at run time with management."""

from __future__ import annotations

from typing import List

from tests.linkroute.lrutil import both_ways, connector
from tests.mesh.conftest import MeshFactory
from tests.mesh.meshproc import Edge, Mesh
from tests.router.amqpclient import Net, msg
from tests.router.routerproc import Router, RouterFactory

from .routable import LINK_TYPE, wait_routable

# A triangle whose direct A-C link costs 10: A reaches C more cheaply through B (cost 2).
TRIANGLE: List[Edge] = [("B", "A", 1), ("C", "B", 1), ("C", "A", 10)]


def _carries(mesh: Mesh, router: str, link_name: str) -> bool:
    """``router`` has a routed link of that name (a router on the path ties two of them)."""
    return any(row.get("linkName") == link_name and str(row.get("owningAddr") or "")[:1] in "CD"
               for row in mesh.mgmt(router).query(LINK_TYPE))


def test_routed_along_the_cheapest_path_then_to_the_nearest_destination(
        mesh_factory: MeshFactory, router_factory: RouterFactory, net: Net) -> None:
    far: Router = router_factory(router_id="X")
    near: Router = router_factory(router_id="Y")
    at_c = connector("cont", far.port) + both_ways("lr", connection="cont")
    mesh = mesh_factory(TRIANGLE, extra={"C": at_c})
    wait_routable(mesh, net, "A", "lr.probe")
    at_far = net.connect(far.url).receiver("lr.q", credit=10)
    at_near = net.connect(near.url).receiver("lr.q", credit=10)

    first = net.connect(mesh["A"].url).sender("lr.q")
    assert first.remote_opened and not first.remote_closed, first.remote_condition
    name = first.link.name
    assert _carries(mesh, "B", name), "the routed link did not go through B (A-B-C costs 2, A-C 10)"
    assert _carries(mesh, "C", name)
    first.send(msg("via-B"))
    net.wait(lambda: at_far.bodies() == ["via-B"], 10, "the message at the container behind C")

    # A second destination for the same prefix, behind B, added at run time: nearer to A.
    mgmt = mesh.mgmt("B")
    mgmt.create("connector", {"host": "127.0.0.1", "port": str(near.port), "role": "route-container",
                              "saslMechanisms": "ANONYMOUS"}, name="near")
    for direction in ("in", "out"):
        mgmt.create("linkRoute", {"prefix": "lr", "direction": direction, "connection": "near"},
                    name=f"lr-near-{direction}")
    client = net.connect(mesh["A"].url)

    def went_near() -> bool:
        probe = client.sender("lr.q")
        here = probe.remote_opened and not probe.remote_closed and not _carries(mesh, "C", probe.link.name)
        if here:
            probe.send(msg("to-nearest"))
        else:
            probe.close()
        return here

    net.wait(went_near, 30, "attaches at A routed to the nearer destination behind B")
    net.wait(lambda: at_near.bodies() == ["to-nearest"], 10, "the message at the container behind B")
    net.pump(0.5)
    assert at_far.bodies() == ["via-B"], "the far container got more than the first message"
    # C still routes its own attaches to its local container.
    local = net.connect(mesh["C"].url).sender("lr.q")
    local.send(msg("from-C"))
    net.wait(lambda: "from-C" in at_far.bodies(), 10, "C's attach at its own container")
