"""With vhost policy on, an interior router polices the connections its edge routers make to
it as user connections, as qdrouterd 1.19 does (policy.c: its vhost check skips only
inter-router connections): the edge's open is admitted by a vhost, and what the edge sends
on behalf of its clients is held to that vhost group's targets, message by message. The edge
listener's policyVhost names the vhost (the management client's own connection gets the
admin vhost '127.0.0.1'). Runs against both kinds of router (tests/interop/test_behaviour_c.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from tests.edge.edgeproc import Routers, interior
from tests.edge.helpers import edge_connections, query, send_until_accepted, wait_edges, wait_until
from tests.policy.test_enforcement import ADMIN_VHOST
from tests.router.amqpclient import REJECTED, Net, msg
from tests.router.fixtures import stop_checked
from tests.router.routerproc import Router

EDGE_VHOST = "edges.example"


def edge_policy(group: str) -> str:
    return ("policy {\n    enableVhostPolicy: true\n}\n" + ADMIN_VHOST
            + f"vhost {{\n    hostname: {EDGE_VHOST}\n    groups: {{\n        edges: {{\n"
            + "            users: anonymous\n" + group + "        }\n    }\n}\n")


EDGE_GROUP = ("            remoteHosts: *\n            sources: *\n            targets: app.*\n"
              "            allowAnonymousSender: true\n            allowDynamicSource: true\n"
              "            allowUserIdProxy: true\n")


@pytest.fixture
def routers(tmp_path: Path) -> Iterator[Routers]:
    made = Routers(tmp_path)
    yield made
    stop_checked(made.started)


def policed_interior(routers: Routers, group: str) -> Router:
    """An interior router whose edge listener polices its edges by vhost edges.example."""
    workdir = routers.tmp_path / "I1"
    workdir.mkdir()
    router = interior(workdir, "I1", extra=edge_policy(group))
    text = router.config_path.read_text()
    assert text.count("    role: edge\n") == 1
    router.config_path.write_text(text.replace("    role: edge\n",
                                               f"    role: edge\n    policyVhost: {EDGE_VHOST}\n"))
    routers.started.append(router)
    return router.start()


def edge_stats(interior_router: Router) -> Dict[str, Any]:
    rows = [row for row in query(interior_router, "vhostStats") if row.get("hostname") == EDGE_VHOST]
    assert rows, "no vhostStats for the edges' vhost"
    return rows[0]


def test_an_edge_is_held_to_its_vhost_targets(routers: Routers, net: Net) -> None:
    inner = policed_interior(routers, EDGE_GROUP)
    outer = routers.edge("E1", [inner.ports["edge"]])
    wait_edges(inner, 1)
    assert edge_stats(inner)["connectionsCurrent"] == 1
    app = net.connect(inner.url).receiver("app.x")
    secret = net.connect(inner.url).receiver("secret.x")
    client = net.connect(outer.url)
    allowed = client.sender("app.x")
    send_until_accepted(net, allowed, "through the edge")
    # The edge's clients may send anything the edge allows; what the edge sends upward is
    # held by the interior to the edge connection's targets.
    forbidden = client.sender(None)
    net.wait(lambda: forbidden.credit > 0, 10, "credit for the anonymous sender on the edge")
    tag = forbidden.send(msg("stolen", to="secret.x"))
    net.wait(lambda: tag in forbidden.outcomes, 15, "the forbidden message's outcome")
    assert forbidden.outcomes[tag].state == REJECTED, forbidden.outcomes[tag]
    net.pump(0.3)
    assert [r.message.body for r in app.received] == ["through the edge"]
    assert secret.received == []


def test_an_edge_the_vhost_refuses_never_attaches(routers: Routers, net: Net) -> None:
    inner = policed_interior(routers, EDGE_GROUP.replace("remoteHosts: *", "remoteHosts: 192.0.2.1"))
    routers.edge("E1", [inner.ports["edge"]])
    wait_until(lambda: edge_stats(inner)["connectionsDenied"] >= 1, what="the edge's connection refused")
    assert edge_connections(inner) == []
    assert edge_stats(inner)["connectionsCurrent"] == 0


def test_edge_and_interior_without_vhost_policy_are_unchanged(tmp_path: Path, net: Net) -> None:
    """Without enableVhostPolicy an edge connection is admitted whatever its vhost."""
    made = Routers(tmp_path)
    try:
        inner = made.interior("I1", extra="policy {\n    maxConnections: 10\n}\n")
        outer = made.edge("E1", [inner.ports["edge"]])
        wait_edges(inner, 1)
        receiver = net.connect(inner.url).receiver("anything.x")
        send_until_accepted(net, net.connect(outer.url).sender("anything.x"), "unpoliced")
        net.wait(lambda: len(receiver.received) == 1, 10, "the message through the edge")
    finally:
        stop_checked(made.started)

