"""A draining router refuses a link-routed attach that another router passes on to it
(docs/operations.md, "Link-routed links, and what is not drained"): A had not yet read that B
is leaving, routed a client's attach towards B's route container, and B answered it with
qd:router-draining, which reaches the client through A, so the client attaches again
elsewhere. What B already carries still settles.

A and B are real router processes; B's inter-router connection to A passes a proxy that holds
back what B sends (its empty link state and withdrawn addresses) until A has passed the attach
on: the window in which a neighbour has not recomputed its paths, made certain.

qdrouterd has no drain: on SIGTERM it exits, and the attach would find no route."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from tests.linkroute.lrutil import both_ways, connector
from tests.mesh.meshproc import Mesh, Timers, build_mesh
from tests.router.amqpclient import ACCEPTED, Net, msg
from tests.router.fixtures import stop_checked
from tests.router.routerproc import Router, RouterFactory

from .holding_proxy import HoldingProxy
from .routable import LINK_TYPE, wait_routable

pytestmark = pytest.mark.qdmesh_only("qdrouterd has no graceful drain (--drain-timeout is qdmesh's)")

DRAIN_TIMEOUT_S = 20
# A's hellos from B are held with the rest: A must not give B up meanwhile.
TIMERS = Timers(hello_max_age=10)


def _pair_through_proxy(tmp_path: Path, container: Router) -> Tuple[Mesh, HoldingProxy]:
    """A and B, B connecting to A through a HoldingProxy; B link-routes lr. to ``container``."""
    mesh = build_mesh(tmp_path, [("B", "A", 1)], TIMERS)
    a, b = mesh["A"], mesh["B"]
    proxy = HoldingProxy(a.inter_listeners["B"][0])
    b.connectors["A"] = ("127.0.0.1", proxy.port, 1)
    b.extra = connector("to-x", container.port) + both_ways("lr.", connection="to-x")
    b.args.extend(["--drain-timeout", str(DRAIN_TIMEOUT_S)])
    b.write_config()
    a.start()
    b.start()
    mesh.wait_converged(timeout=30)
    return mesh, proxy


def _routed_at(mesh: Mesh, router: str, link_name: str) -> bool:
    """``router`` has passed the attach of ``link_name`` on as a link-routed one."""
    rows: List[Dict[str, Any]] = mesh.mgmt(router).query(LINK_TYPE)
    return any(r.get("linkName") == link_name and str(r.get("owningAddr") or "").startswith("C")
               for r in rows)


def test_a_draining_router_refuses_a_routed_attach_passed_on_by_a_neighbour(
        tmp_path: Path, router_factory: RouterFactory, net: Net) -> None:
    container = router_factory(router_id="X")
    mesh, proxy = _pair_through_proxy(tmp_path, container)
    try:
        wait_routable(mesh, net, "A", "lr.q")
        # A routed delivery B carries, held unsettled at the container: B's drain waits for it.
        receiver = net.connect(container.url).receiver("lr.q", credit=10, settle=None)
        client = net.connect(mesh["A"].url)
        sender = client.sender("lr.q")
        net.wait(lambda: sender.credit > 0, 30, "credit through the link route")
        sender.send(msg("in flight"))
        net.wait(lambda: len(receiver.unsettled) == 1, 30, "the routed delivery held at the container")

        proxy.hold()
        b = mesh["B"]
        b.exit_expected = True
        b.send_signal(signal.SIGTERM)
        net.wait(lambda: "Draining router B" in b.stderr_text(), 10, "B's drain to begin")
        late = client.sender("lr.late", wait=False)  # answered once B has answered
        net.wait(lambda: _routed_at(mesh, "A", late.link.name), 10, "A to pass the late attach on to B")
        assert not late.remote_closed
        proxy.release()

        net.wait(lambda: late.remote_closed, 10, "the late attach answered")
        assert late.remote_condition is not None, "refused without a condition"
        assert late.remote_condition.name == "qd:router-draining", late.remote_condition
        assert "router B is shutting down" in (late.remote_condition.description or "")
        # What B carried still settles, and then it leaves.
        receiver.settle_unsettled(ACCEPTED)
        net.wait(sender.all_settled, 15, "the outcome back through the draining router")
        assert sender.outcome_counts() == {"accepted": 1}
        assert b.wait_exit(DRAIN_TIMEOUT_S) == 0
        assert "1 attach(es) refused" in b.stderr_text(), b.stderr_text()[-3000:]
    finally:
        mesh.close()
        proxy.close()
        stop_checked(mesh.routers.values())
