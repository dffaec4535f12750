"""Link routes across a line of three interior routers: the route container (a qdmesh
router acting as container) is connected to C only; clients attach at A."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any, Dict

from proton import Delivery

from tests.linkroute.lrutil import NO_ROUTE, both_ways, connector
from tests.router.amqpclient import Net, msg
from tests.router.routerproc import Router, RouterFactory

from .conftest import LineFactory
from .routable import wait_routable

# The link-routing decisions in the container's log, for when a test fails.
CORE_DEBUG = "log {\n    module: ROUTER_CORE\n    enable: debug+\n}\n"
def test_sender_at_a_reaches_container_behind_c_with_outcomes(
        line_factory: LineFactory, router_factory: RouterFactory, net: Net) -> None:
    container: Router = router_factory(router_id="X", extra_config=CORE_DEBUG)
    mesh = line_factory({"C": connector("cont", container.port) + both_ways("lr", connection="cont")})
    consumer = net.connect(container.url).receiver("lr.orders", credit=10, settle=None)
    wait_routable(mesh, net, "A", "lr.orders")
    snd = net.connect(mesh["A"].url).sender("lr.orders")
    for i in range(4):
        snd.send(msg(f"m{i}"))
    net.wait(lambda: len(consumer.received) == 4, 10, "4 messages at the container")
    assert consumer.bodies() == ["m0", "m1", "m2", "m3"]
    # Each outcome the container's consumer gives travels back over three routers.
    for rec, state in zip(consumer.received, [Delivery.ACCEPTED, Delivery.REJECTED,
                                               Delivery.RELEASED, Delivery.ACCEPTED]):
        rec.delivery.update(state)
        rec.delivery.settle()
    net.wait(snd.all_settled, 10, "all outcomes back at A")
    assert [snd.outcomes[t].name for t in snd.tags] == ["accepted", "rejected", "released", "accepted"]


def test_receiver_at_a_gets_credit_limited_messages_from_container(
        line_factory: LineFactory, router_factory: RouterFactory, net: Net) -> None:
    container: Router = router_factory(router_id="X", extra_config=CORE_DEBUG)
    mesh = line_factory({"C": connector("cont", container.port) + both_ways("lr", connection="cont")})
    producer = net.connect(container.url).sender("lr.feed")
    for i in range(6):
        producer.send(msg(f"f{i}"))
    wait_routable(mesh, net, "A", "lr.probe", receiving=True)
    rcv = net.connect(mesh["A"].url).receiver("lr.feed", credit=2, refill=False)
    net.wait(lambda: len(rcv.received) == 2, 20, "2 messages (the credit given) at A")
    net.pump(0.5)
    assert len(rcv.received) == 2, "more messages than credit crossed the routed link"
    rcv.drain(10)
    net.wait(lambda: len(rcv.received) == 6 and rcv.credit == 0, 20, "drain delivered the rest")
    net.wait(lambda: producer.settled_count() == 6, 10, "outcomes back at the container")


def test_no_destination_is_refused_with_no_route(line_factory: LineFactory, net: Net) -> None:
    """A knows the route (configured without a connection, as on every router of an
    upstream mesh) but no router has its container connected."""
    mesh = line_factory({"A": both_ways("lr"),
                         "C": connector("cont", 1) + both_ways("lr", connection="cont")})
    snd = net.connect(mesh["A"].url).sender("lr.x")
    net.wait(lambda: snd.remote_closed, 10, "refusal")
    assert snd.remote_condition is not None and snd.remote_condition.name == NO_ROUTE


def test_destination_withdrawn_when_container_goes(
        line_factory: LineFactory, router_factory: RouterFactory, net: Net) -> None:
    container: Router = router_factory(router_id="X", extra_config=CORE_DEBUG)
    mesh = line_factory({"A": both_ways("lr"),
                         "C": connector("cont", container.port) + both_ways("lr", connection="cont")})
    wait_routable(mesh, net, "A", "lr.q", receiving=True)
    rcv = net.connect(mesh["A"].url).receiver("lr.q", credit=5)
    assert rcv.remote_opened and not rcv.remote_closed
    container.stop()
    container.exit_expected = True   # stopped on purpose; teardown must not call it a crash
    net.wait(lambda: rcv.remote_closed, 15, "routed link detached when the container went")
    deadline = time.monotonic() + 15
    while True:   # the advertisement is withdrawn: new attaches are refused, not left hanging
        snd = net.connect(mesh["A"].url).sender("lr.q")
        if snd.remote_closed and snd.remote_condition is not None and snd.remote_condition.name == NO_ROUTE:
            break
        assert time.monotonic() < deadline, "attach still routed after the container left"
        net.pump(0.3)


def test_dynamic_source_routed_by_x_opt_qd_address(
        line_factory: LineFactory, router_factory: RouterFactory, net: Net) -> None:
    """A receiver at A with a dynamic source whose dynamic-node-properties carry
    x-opt-qd.address is link-routed by that address to the container behind C, which makes
    the node; its address comes back to the client, and messages sent there arrive."""
    container: Router = router_factory(router_id="X", extra_config=CORE_DEBUG)
    mesh = line_factory({"C": connector("cont", container.port) + both_ways("lr", connection="cont")})
    wait_routable(mesh, net, "A", "lr.probe", receiving=True)
    rcv = net.connect(mesh["A"].url).receiver(None, credit=5, dynamic=True,
                                              dynamic_properties={"x-opt-qd.address": "lr.dynamic"})
    assert rcv.remote_opened and not rcv.remote_closed, rcv.remote_condition
    node = rcv.link.remote_source.address
    assert node, "the container's answer names the dynamic node it made"
    snd = net.connect(container.url).sender(node)
    snd.send(msg("to-the-dynamic-node"))
    net.wait(lambda: rcv.bodies() == ["to-the-dynamic-node"], 10, "the message at A through the routed link")


def test_link_route_destinations_listed_as_addresses(
        line_factory: LineFactory, router_factory: RouterFactory, net: Net) -> None:
    """qdstat -a shows link-route destinations (classes link-in/link-out) as qdrouterd does:
    at C, with its connected container; at A, learned from the mesh, with C as the router
    that has one."""
    container: Router = router_factory(router_id="X")
    mesh = line_factory({"C": connector("cont", container.port) + both_ways("lr", connection="cont")})
    wait_routable(mesh, net, "A", "lr.probe")
    wait_routable(mesh, net, "A", "lr.probe", receiving=True)

    def rows(rid: str) -> Dict[str, Dict[str, Any]]:
        return {str(r["key"]): r for r in mesh.mgmt(rid).query("org.apache.qpid.dispatch.router.address")
                if str(r["key"])[:1] in "CDEF"}

    at_c, at_a = rows("C"), rows("A")
    assert {k: (r["containerCount"], r["remoteCount"]) for k, r in at_c.items()} == \
        {"Clr": (1, 0), "Dlr": (1, 0)}
    assert {k: (r["containerCount"], r["remoteCount"], r["remoteHostRouters"])
            for k, r in at_a.items()} == {"Clr": (0, 1, ["C"]), "Dlr": (0, 1, ["C"])}
    assert all(r["distribution"] == "linkBalanced" for r in [*at_a.values(), *at_c.values()])
    shown = subprocess.run([sys.executable, "-m", "qdrouter.tools.qdstat", "-a", "-b", mesh["A"].url],
                           capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0, shown.stderr
    classes = {tuple(line.split()[:2]) for line in shown.stdout.splitlines()
               if line.split()[:1] in (["link-in"], ["link-out"])}
    assert classes == {("link-in", "lr"), ("link-out", "lr")}, shown.stdout
