"""Live TLS (qdmesh): oldestValidOrdinal raised on the profile of a router's own connector
replaces its connection make-before-break: a route-container connection (an auto-link
through it keeps carrying messages) and an edge router's uplink to the interior; the
connector never stops being operational (docs/security.md, "Live TLS")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.router.amqpclient import ACCEPTED, Net, ReceiverLink, SenderLink, msg
from tests.router.fixtures import stop_checked
from tests.router.routerproc import Router
from tests.security.certs import CertAuthority
from tests.security.test_live_tls import Pki
from tests.security.test_tls import profile

pytestmark = pytest.mark.qdmesh_only("sslProfile UPDATE is a qdmesh extension: qdrouterd 1.19 refuses it")

PROFILE = "org.apache.qpid.dispatch.sslProfile"
TIMERS = "    helloIntervalSeconds: 1\n    helloMaxAgeSeconds: 3\n"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pki]:
    yield Pki(tmp_path_factory.mktemp("connector-pki"))


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Callable[..., Router]]:
    routers: List[Router] = []

    def make(name: str, mode: str, extra: str, listeners: Dict[str, Dict[str, str]] | None = None) -> Router:
        workdir = tmp_path / name
        workdir.mkdir()
        router = Router(workdir, name, extra_config=extra, extra_listeners=listeners)
        text = router.config_path.read_text().replace("    mode: standalone", f"    mode: {mode}")
        if mode == "interior":
            text = text.replace(f"    id: {name}\n", f"    id: {name}\n{TIMERS}", 1)
        router.config_path.write_text(text)
        routers.append(router)
        return router.start()

    yield make
    stop_checked(routers)


def connector_section(name: str, port: int, role: str) -> str:
    # localhost: the name the server certificate carries (verifyHostname defaults to true).
    return (f"connector {{\n    name: {name}\n    host: localhost\n    port: {port}\n    role: {role}\n"
            f"    sslProfile: client\n}}\n")


def out_connections(router: Router, role: str) -> List[Dict[str, Any]]:
    with ManagementClient(router.url, timeout=10) as client:
        return [dict(row) for row in client.query("connection")
                if row["role"] == role and row["dir"] == "out"]


def connector_status(router: Router, name: str) -> str:
    with ManagementClient(router.url, timeout=10) as client:
        return str(client.read("connector", name=name)["connectionStatus"])


def rotate(net: Net, router: Router, connector: str, role: str) -> None:
    """Raise oldestValidOrdinal of ``router``'s client profile and wait until its connector's
    connection is remade with the new ordinal, the connector operational all the while."""
    before = out_connections(router, role)
    assert [row["sslProfileOrdinal"] for row in before] == [0]
    operational = connector_status(router, connector)
    with ManagementClient(router.url, timeout=10) as client:
        assert client.update(PROFILE, {"oldestValidOrdinal": 1}, name="client")["ordinal"] == 1
    seen: List[str] = []

    def replaced() -> bool:
        seen.append(connector_status(router, connector))
        rows = out_connections(router, role)
        return [(row["sslProfileOrdinal"], row["identity"] == before[0]["identity"]) for row in rows] \
            == [(1, False)]
    net.wait(replaced, 60, "the connector's connection remade with ordinal 1")
    assert set(seen) == {operational}, f"the connector was not operational throughout: {seen}"


def send_and_check(net: Net, sender: SenderLink, receiver: ReceiverLink, count: int) -> None:
    first = len(receiver.received)
    for index in range(count):
        sender.send(msg(f"m{first + index}"))
    net.wait(lambda: sender.all_settled() and len(receiver.received) == first + count, 30, "messages through")
    assert sender.outcome_counts() == {"accepted": sender.sent}


def _through_a_container(started: Callable[..., Router], net: Net, pki: Pki,
                         settle: int | None = ACCEPTED) -> Tuple[Router, Any, Any]:
    """A router whose auto-link reaches a route container over TLS: (router, sender into the
    router, receiver at the container settling with ``settle``), once the auto-link gives
    credit."""
    container = started("RC", "standalone", profile("server", pki.first, None),
                        listeners={"tls": {"sslProfile": "server", "requireSsl": "true"}})
    autolink = "autoLink {\n    address: rc.q\n    direction: out\n    connection: to-container\n}\n"
    router = started("R", "standalone", profile("client", None, pki.ca.cert) + autolink
                     + connector_section("to-container", container.ports["tls"], "route-container"))
    receiver = net.connect(container.url).receiver("rc.q", settle=settle)
    sender = net.connect(router.url).sender("rc.q")
    net.wait(lambda: sender.credit > 0, 30, "the auto-link to the container")
    return router, sender, receiver


def test_route_container_connection_is_replaced(started: Callable[..., Router], net: Net, pki: Pki) -> None:
    router, sender, receiver = _through_a_container(started, net, pki)
    send_and_check(net, sender, receiver, 10)
    rotate(net, router, "to-container", "route-container")
    send_and_check(net, sender, receiver, 10)


def auto_link_rows(router: Router) -> Dict[str, Dict[str, Any]]:
    """The auto-link's links (to the container, address rc.q) by connection identity."""
    with ManagementClient(router.url, timeout=10) as client:
        return {str(row["connectionId"]): dict(row) for row in client.query("router.link")
                if row["linkDir"] == "out" and str(row.get("owningAddr") or "").endswith("rc.q")}


def test_route_container_replacement_takes_over_while_deliveries_are_unsettled(
        started: Callable[..., Router], net: Net, pki: Pki) -> None:
    """The container holds what it received unsettled: the replacement connection takes the
    auto-link over at once and carries what is sent next; the old one stays until what it
    carried is settled, then closes. Every message accepted."""
    router, sender, receiver = _through_a_container(started, net, pki, settle=None)
    for index in range(10):
        sender.send(msg(f"m{index}"))
    net.wait(lambda: len(receiver.unsettled) == 10, 30, "ten deliveries held unsettled at the container")
    old = str(out_connections(router, "route-container")[0]["identity"])
    with ManagementClient(router.url, timeout=10) as client:
        client.update(PROFILE, {"oldestValidOrdinal": 1}, name="client")

    def taken_over() -> bool:
        rows = auto_link_rows(router)
        return len(rows) == 2 and old in rows and rows[old]["creditAvailable"] == 0 and sender.credit > 0
    net.wait(taken_over, 30, "the auto-link attached on the replacement connection")
    for index in range(10, 20):
        sender.send(msg(f"m{index}"))
    net.wait(lambda: len(receiver.unsettled) == 20, 30, "ten more through the replacement")
    rows = auto_link_rows(router)
    assert (rows[old]["unsettledCount"], rows[old]["deliveryCount"]) == (10, 10)
    (new_id,) = [cid for cid in rows if cid != old]
    assert rows[new_id]["deliveryCount"] == 10
    assert len(out_connections(router, "route-container")) == 2  # the old one waits for its deliveries
    receiver.settle_unsettled(ACCEPTED)
    net.wait(lambda: [str(row["identity"]) for row in out_connections(router, "route-container")] == [new_id],
             30, "the old connection closed once what it carried was settled")
    net.wait(sender.all_settled, 30, "every outcome")
    assert sender.outcome_counts() == {"accepted": 20}
    assert sorted(int(body[1:]) for body in receiver.bodies()) == list(range(20))


def routed_out_rows(router: Router) -> List[Dict[str, Any]]:
    """The container ends of link-routed links toward the container (lr.*)."""
    with ManagementClient(router.url, timeout=10) as client:
        return [dict(row) for row in client.query("router.link")
                if row["linkDir"] == "out" and str(row.get("owningAddr") or "").startswith("Clr.")]


def test_link_routed_attaches_go_to_the_replacement_and_the_old_one_waits_for_its_deliveries(
        started: Callable[..., Router], net: Net, pki: Pki) -> None:
    container = started("RC", "standalone", profile("server", pki.first, None),
                        listeners={"tls": {"sslProfile": "server", "requireSsl": "true"}})
    route = "linkRoute {\n    prefix: lr.\n    direction: in\n    connection: to-container\n}\n"
    router = started("R", "standalone", profile("client", None, pki.ca.cert) + route
                     + connector_section("to-container", container.ports["tls"], "route-container"))
    net.wait(lambda: len(out_connections(router, "route-container")) == 1, 30, "the container's connection")
    receiver = net.connect(container.url).receiver("lr.q", settle=None)
    first = net.connect(router.url).sender("lr.q")
    net.wait(lambda: first.credit > 0, 30, "credit through the link route")
    for index in range(5):
        first.send(msg(f"a{index}"))
    net.wait(lambda: len(receiver.unsettled) == 5, 30, "five routed deliveries held unsettled")
    old = str(out_connections(router, "route-container")[0]["identity"])
    with ManagementClient(router.url, timeout=10) as client:
        client.update(PROFILE, {"oldestValidOrdinal": 1}, name="client")
    net.wait(lambda: len(out_connections(router, "route-container")) == 2, 30, "the replacement connection")
    net.pump(1.0)
    second = net.connect(router.url).sender("lr.q")  # a new attach: routed over the replacement
    net.wait(lambda: second.credit > 0, 30, "credit through the replacement")
    by_connection = {str(row["connectionId"]): row for row in routed_out_rows(router)}
    assert len(by_connection) == 2 and by_connection[old]["unsettledCount"] == 5, by_connection
    for index in range(5):
        second.send(msg(f"b{index}"))
    net.wait(lambda: len(receiver.unsettled) == 10, 30, "five more through the replacement")
    assert len(out_connections(router, "route-container")) == 2  # the old one waits for its deliveries
    receiver.settle_unsettled(ACCEPTED)
    net.wait(lambda: len(out_connections(router, "route-container")) == 1, 30,
             "the old connection closed once its routed deliveries were settled")
    net.wait(lambda: first.all_settled() and second.all_settled(), 30, "every outcome")
    assert first.outcome_counts() == {"accepted": 5} and second.outcome_counts() == {"accepted": 5}


def test_edge_uplink_is_replaced(started: Callable[..., Router], net: Net, pki: Pki) -> None:
    interior = started("I", "interior", profile("server", pki.first, None),
                       listeners={"edge": {"role": "edge", "sslProfile": "server", "requireSsl": "true"}})
    edge = started("E", "edge", profile("client", None, pki.ca.cert)
                   + connector_section("uplink", interior.ports["edge"], "edge"))
    pid = edge.pid
    net.wait(lambda: len(out_connections(edge, "edge")) == 1, 30, "the edge's uplink")
    receiver = net.connect(interior.url).receiver("edge.q")
    sender = net.connect(edge.url).sender("edge.q")
    net.wait(lambda: sender.credit > 0, 30, "credit through the uplink")
    send_and_check(net, sender, receiver, 10)
    rotate(net, edge, "uplink", "edge")
    send_and_check(net, sender, receiver, 10)
    assert edge.pid == pid and edge.is_running()
    with ManagementClient(interior.url, timeout=10) as client:
        assert len([row for row in client.query("connection") if row["role"] == "edge"]) == 1



def test_a_replacement_that_cannot_open_leaves_the_connection_up(started: Callable[..., Router], net: Net,
                                                                  pki: Pki, tmp_path: Path) -> None:
    """Material the peer's certificate does not pass (a CA that did not sign it): the
    replacement fails, the connection made before stays and keeps carrying messages."""
    router, sender, receiver = _through_a_container(started, net, pki)
    before = out_connections(router, "route-container")
    other_ca = CertAuthority(tmp_path / "other-ca", "Other CA")
    with ManagementClient(router.url, timeout=10) as client:
        client.update(PROFILE, {"caCertFile": str(other_ca.cert), "oldestValidOrdinal": 1}, name="client")
    net.wait(lambda: "replacement connection" in router.stderr_text() and "failed" in router.stderr_text(),
             30, "the replacement to fail")
    assert [row["identity"] for row in out_connections(router, "route-container")] == \
        [before[0]["identity"]]
    send_and_check(net, sender, receiver, 10)
