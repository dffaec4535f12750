"""Where requests can be sent and where replies can go: the agent's three addresses, the
`amqp:/` form, anonymous senders, dynamic and named reply-to addresses."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.management.mgmt import MgmtClient, assert_routing
from tests.router.amqpclient import Net
from tests.router.routerproc import Router


def check_answers(client: MgmtClient) -> None:
    reply = client.request("GET-MGMT-NODES")
    assert reply.status == 200, reply
    assert reply.body == []
    assert reply.message.address in (client.reply_to, f"amqp:/{client.reply_to}")
    rows = client.query("router", ["id"])
    assert rows == [{"id": "R1"}]


@pytest.mark.parametrize("target", [
    "$management", "_local/$management", "_topo/0/R1/$management", "_local/$_management_internal",
    "amqp:/$management", "amqp:/_local/$management", "amqp:/_topo/0/R1/$management",
])
def test_agent_answers_at_link_target(router: Router, net: Net, target: str) -> None:
    check_answers(MgmtClient(net, net.connect(router.url), address=target))


@pytest.mark.parametrize("to", ["$management", "amqp:/$management", "_local/$management",
                                "_topo/0/R1/$management"])
def test_agent_answers_anonymous_sender_with_to(router: Router, net: Net, to: str) -> None:
    check_answers(MgmtClient(net, net.connect(router.url), address=None, to=to))


def test_topo_address_of_another_router_is_not_the_agent(router: Router, net: Net) -> None:
    client = MgmtClient(net, net.connect(router.url), address=None, to="_topo/0/R9/$management")
    m = client.message("GET-MGMT-NODES")
    outcome = client.send(m)
    assert outcome.name in ("released", "modified", "rejected"), outcome
    net.pump(0.2)
    assert not client.receiver.received
    assert_routing(net, router.url)


@pytest.mark.c_router_bug("qdrouterd sends no reply at all to a request whose correlation-id is a ulong "
                          "(12345)")
def test_dynamic_reply_to_is_router_assigned_and_correlated(mgmt: MgmtClient) -> None:
    assert mgmt.reply_to
    first = mgmt.message("GET-TYPES", correlation_id="one")
    second = mgmt.message("GET-MGMT-NODES", correlation_id=12345)
    mgmt.send(first)
    mgmt.send(second)
    r2 = mgmt.wait_reply(12345)
    r1 = mgmt.wait_reply("one")
    assert r1.status == r2.status == 200
    assert isinstance(r1.body, dict) and r2.body == []


_NOT_ECHOED = pytest.mark.c_router_bug("qdrouterd answers a request whose correlation-id is a ulong or a "
                                       "uuid with no correlation-id: the requester cannot match the reply")


@pytest.mark.parametrize("correlation_id", [
    pytest.param("text-id", id="string"),
    pytest.param(12345, id="ulong", marks=_NOT_ECHOED),
    pytest.param(uuid.UUID("12345678-1234-5678-1234-567812345678"), id="uuid", marks=_NOT_ECHOED),
    pytest.param(b"\x01\x02binary", id="binary"),
])
def test_correlation_id_of_every_type_is_echoed(mgmt: MgmtClient, correlation_id: Any) -> None:
    m = mgmt.message("GET-MGMT-NODES", correlation_id=correlation_id)
    assert mgmt.send(m).name == "accepted"
    net = mgmt.net
    net.wait(lambda: len(mgmt.receiver.received) == 1, 5, "the reply")
    echoed = mgmt.receiver.received[0].message.correlation_id
    if isinstance(correlation_id, bytes):
        echoed = bytes(echoed) if echoed is not None else None
    assert echoed == correlation_id


@pytest.mark.differs_from_c("without a correlation-id qdrouterd answers with none (the requester cannot "
                            "match the reply); qdmesh uses the request's message-id, as the AMQP management "
                            "draft says")
def test_message_id_is_used_when_there_is_no_correlation_id(mgmt: MgmtClient) -> None:
    m = mgmt.message("GET-MGMT-NODES")
    m.correlation_id = None
    m.id = "msg-id-7"
    assert mgmt.send(m).name == "accepted"
    assert mgmt.wait_reply("msg-id-7").status == 200


@pytest.mark.parametrize("reply_to", ["my.replies", "closest.replies", "multicast.replies"])
def test_named_receiver_address_as_reply_to(router: Router, net: Net, reply_to: str) -> None:
    check_answers(MgmtClient(net, net.connect(router.url), reply_to=reply_to))


def test_reply_to_in_amqp_uri_form(router: Router, net: Net) -> None:
    client = MgmtClient(net, net.connect(router.url), reply_to="uri.replies")
    m = client.message("GET-MGMT-NODES", reply_to="amqp:/uri.replies")
    assert client.send(m).name == "accepted"
    assert client.wait_reply(m.correlation_id).status == 200


def test_reply_goes_to_another_connection(router: Router, net: Net) -> None:
    listener = net.connect(router.url).receiver("elsewhere.replies")
    client = MgmtClient(net, net.connect(router.url))
    m = client.message("GET-MGMT-NODES", reply_to="elsewhere.replies")
    assert client.send(m).name == "accepted"
    net.wait(lambda: len(listener.received) == 1, 5, "reply on the other connection")
    reply = listener.received[0].message
    assert reply.correlation_id == m.correlation_id
    assert reply.properties["statusCode"] == 200
    assert not client.receiver.received


@pytest.mark.parametrize("target", [None, "$management"])
def test_presettled_requests_are_answered(router: Router, net: Net, target: str | None) -> None:
    c = net.connect(router.url)
    client = MgmtClient(net, c, address=target, to="$management" if target is None else None)
    snd = c.sender(target, presettled=True)
    net.wait(lambda: snd.credit > 0, 5, "credit")
    m = client.message("GET-MGMT-NODES")
    snd.send(m)
    assert client.wait_reply(m.correlation_id).status == 200


def test_agent_addresses_are_listed_as_qdrouterd_lists_them(router: Router, net: Net,
                                                            mgmt: MgmtClient) -> None:
    """qdstat -a on a standalone router: local $_management_internal and $management, mobile
    $management; no row for this router's own topological address, whose requests count
    in the local row (qdrouterd resolves `_topo/0/<own id>/...` to the local address)."""
    via_topo = MgmtClient(net, net.connect(router.url), address="_topo/0/R1/$management")
    for _ in range(3):
        check_answers(via_topo)
    rows = {row["key"]: row for row in mgmt.query("router.address")}
    assert {"L$_management_internal", "L$management", "M0$management"} <= set(rows), sorted(rows)
    assert not [key for key in rows if key.startswith("T")], sorted(rows)
    local = rows["L$management"]
    assert (local["inProcess"], local["distribution"]) == (1, "closest")
    # check_answers makes two requests, GET-MGMT-NODES and a QUERY.
    assert local["deliveriesToContainer"] == 6, local
    # qdstat -g's Addresses: the rows qdstat -a lists.
    assert mgmt.query("router", ["addrCount"])[0]["addrCount"] == len(rows)
