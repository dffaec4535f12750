"""CREATE / READ / UPDATE / DELETE of listener entities at run time."""

from __future__ import annotations

import socket
from typing import Dict

import pytest

from tests.management.mgmt import LISTENER, MgmtClient, assert_routing
from tests.router.amqpclient import Net, msg, send_and_settle
from tests.router.routerproc import Router, free_port


def listener_attrs(port: int) -> Dict[str, str]:
    return {"host": "127.0.0.1", "port": str(port), "saslMechanisms": "ANONYMOUS"}


def refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return False
    except ConnectionRefusedError:
        return True


def round_trip(net: Net, url: str, address: str, body: str) -> None:
    c = net.connect(url, timeout=5)
    rcv = c.receiver(address)
    snd = c.sender(address)
    assert send_and_settle(net, snd, [msg(body)], 5)[0].name == "accepted"
    net.wait(lambda: len(rcv.received) == 1, 5, f"{body!r} via {url}")
    assert rcv.bodies() == [body]


def test_create_listener_opens_port_and_delete_closes_it(mgmt: MgmtClient, router: Router, net: Net) -> None:
    port = free_port()
    url = f"amqp://127.0.0.1:{port}"
    created = mgmt.create("listener", "extra", listener_attrs(port))
    assert created["name"] == "extra"
    assert created["type"] == LISTENER
    assert created["port"] == str(port)
    assert created["identity"]

    # Traffic through the new port, to a receiver on the old one.
    old = net.connect(router.url)
    rcv = old.receiver("closest.across")
    kept = net.connect(url)
    snd = kept.sender("closest.across")
    assert send_and_settle(net, snd, [msg("via new port")])[0].name == "accepted"
    net.wait(lambda: rcv.bodies() == ["via new port"], 5, "message sent through the created listener")
    assert [r["name"] for r in mgmt.query("listener", ["name"])].count("extra") == 1

    mgmt.delete("listener", "extra")
    assert refused(port), "port still accepts connections after DELETE"
    assert "extra" not in [r["name"] for r in mgmt.query("listener", ["name"])]
    # The connection accepted before the DELETE stays up and keeps routing.
    assert send_and_settle(net, snd, [msg("after delete")])[0].name == "accepted"
    net.wait(lambda: len(rcv.received) == 2, 5, "message on the surviving connection")
    assert kept.alive
    assert_routing(net, router.url)


def test_create_listener_by_long_type_name_without_name(mgmt: MgmtClient, net: Net) -> None:
    port = free_port()
    reply = mgmt.request("CREATE", type=LISTENER, body=listener_attrs(port))
    assert reply.status == 201, reply
    # Without a name the name is the identity (Qpid Dispatch 0.7 book, 3.3.5).
    assert reply.body["name"] == reply.body["identity"]
    round_trip(net, f"amqp://127.0.0.1:{port}", "closest.anon-listener", "hello")
    assert mgmt.request("DELETE", type=LISTENER, identity=reply.body["identity"]).status == 204
    assert refused(port)


def test_read_listener_by_name_and_by_identity(mgmt: MgmtClient, router: Router) -> None:
    port = free_port()
    created = mgmt.create("listener", "readable", listener_attrs(port))
    by_name = mgmt.ok("READ", type="listener", name="readable")
    by_identity = mgmt.ok("READ", type="listener", identity=created["identity"])
    untyped = mgmt.ok("READ", identity=created["identity"])
    assert by_name == by_identity == untyped
    assert by_name["port"] == str(port) and by_name["name"] == "readable"


def test_update_of_listener_port_is_refused_and_changes_nothing(mgmt: MgmtClient, router: Router,
                                                                 net: Net) -> None:
    port = free_port()
    mgmt.create("listener", "fixed", listener_attrs(port))
    other = free_port()
    reply = mgmt.request("UPDATE", type="listener", name="fixed", body={"port": str(other)})
    assert reply.status in (400, 501), reply
    assert "UPDATE" in reply.description or "port" in reply.description, reply
    assert mgmt.ok("READ", type="listener", name="fixed")["port"] == str(port)
    round_trip(net, f"amqp://127.0.0.1:{port}", "closest.fixed", "still here")
    assert refused(other)


def test_update_of_non_updatable_log_attribute_names_it(mgmt: MgmtClient) -> None:
    reply = mgmt.request("UPDATE", type="log", name="log/ROUTER", body={"module": "SERVER"})
    assert reply.status == 400, reply
    assert "module" in reply.description
    assert mgmt.ok("READ", type="log", name="log/ROUTER")["module"] == "ROUTER"


def test_duplicate_listener_name_is_refused(mgmt: MgmtClient, net: Net) -> None:
    port = free_port()
    mgmt.create("listener", "twice", listener_attrs(port))
    second = free_port()
    reply = mgmt.request("CREATE", type="listener", name="twice", body=listener_attrs(second))
    assert reply.status == 400, reply
    assert "twice" in reply.description
    assert refused(second), "the refused CREATE opened its port anyway"
    assert [r["name"] for r in mgmt.query("listener", ["name"])].count("twice") == 1
    round_trip(net, f"amqp://127.0.0.1:{port}", "closest.twice", "first one works")


@pytest.mark.differs_from_c("qdrouterd answers 201 Created and then fails to bind, logging it; qdmesh binds "
                            "before it answers and refuses with 400")
def test_create_listener_on_a_port_in_use_fails_and_is_not_kept(mgmt: MgmtClient, router: Router) -> None:
    reply = mgmt.request("CREATE", type="listener", name="clash", body=listener_attrs(router.port))
    assert 400 <= reply.status < 600 and reply.status != 201, reply
    assert "clash" not in [r["name"] for r in mgmt.query("listener", ["name"])]


def test_delete_listener_twice_gives_404(mgmt: MgmtClient) -> None:
    mgmt.create("listener", "once", listener_attrs(free_port()))
    mgmt.delete("listener", "once")
    reply = mgmt.request("DELETE", type="listener", name="once")
    assert reply.status == 404, reply


@pytest.mark.parametrize("operation", [
    pytest.param("DELETE", marks=pytest.mark.differs_from_c(
        "qdrouterd answers DELETE of org.apache.qpid.dispatch.router 403 Forbidden (501 when the type is "
        "named short); qdmesh 501 Not Implemented, as for every operation a type lacks")),
    pytest.param("UPDATE", marks=pytest.mark.c_router_bug(
        "qdrouterd sends no reply at all to UPDATE of org.apache.qpid.dispatch.router")),
])
def test_router_entity_cannot_be_deleted_or_updated(mgmt: MgmtClient, router: Router, net: Net,
                                                     operation: str) -> None:
    ident = mgmt.query("router", ["identity"])[0]["identity"]
    reply = mgmt.request(operation, type="router", identity=ident, body={})
    assert reply.status == 501, reply  # Not Implemented, as qdrouterd answers
    assert operation in reply.description
    assert mgmt.query("router", ["id"]) == [{"id": "R1"}]
    assert_routing(net, router.url)


def test_delete_configured_listener_keeps_existing_connections(mgmt: MgmtClient, router: Router,
                                                                net: Net) -> None:
    other = free_port()
    mgmt.create("listener", "spare", listener_attrs(other))
    # Named as qdrouterd names an unnamed listener: after its host and port.
    mgmt.delete("listener", f"listener/127.0.0.1:{router.port}")
    assert refused(router.port)
    # The management connection came in through the deleted listener and still works.
    assert mgmt.query("listener", ["name"]) == [{"name": "spare"}]
    round_trip(net, f"amqp://127.0.0.1:{other}", "closest.spare", "via the spare")


def test_request_after_creating_a_connector_to_a_refused_port_is_answered(router: Router) -> None:
    """The connector's failed connection is freed in the same loop turn that read the next
    request: that request must still be answered (it was once dropped with the failed
    connection's events)."""
    from qdrouter.tools.management_client import ManagementClient

    with ManagementClient(f"127.0.0.1:{router.port}", timeout=10) as client:
        for i in range(3):
            client.create("connector", {"host": "127.0.0.1", "port": str(free_port()),
                                        "role": "route-container"}, name=f"refused{i}")
            rows = client.query("connector")
            assert f"refused{i}" in {r.get("name") for r in rows}, rows
