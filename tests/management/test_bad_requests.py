"""Malformed and invalid management requests: each gets a 4xx (or its delivery is rejected)
with a description, and the router keeps routing afterwards."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from proton import Message

from tests.management.mgmt import LISTENER, MgmtClient, assert_routing
from tests.router.amqpclient import Net, send_and_settle
from tests.router.routerproc import Router, free_port

LISTEN: Dict[str, Any] = {"host": "127.0.0.1", "saslMechanisms": "ANONYMOUS"}

# (id, request keyword arguments, expected status, words the description must contain)
CASES = [
    ("unknown-type-create", dict(operation="CREATE", type="org.example.nothing", name="n", body={}),
     (400, 404), ["org.example.nothing"]),
    ("unknown-type-read", dict(operation="READ", type="nothing", name="n"), (400, 404), ["nothing"]),
    ("unknown-type-query", dict(operation="QUERY", props={"entityType": "nothing"},
                                body={"attributeNames": []}), (400, 404), ["nothing"]),
    ("unknown-attribute", dict(operation="CREATE", type="listener", name="l",
                               body={**LISTEN, "port": "0", "colour": "blue"}), (400,), ["colour"]),
    ("wrong-type-int", dict(operation="CREATE", type="listener", name="l",
                            body={**LISTEN, "port": "0", "maxFrameSize": "big"}), (400,), ["maxFrameSize"]),
    ("wrong-type-port", dict(operation="CREATE", type="listener", name="l",
                             body={**LISTEN, "port": "notaport"}), (400,), ["port"]),
    ("missing-operation", dict(type="listener", name="x"), (400,), ["operation"]),
    ("operation-not-string", dict(operation=42, type="listener", name="x"), (400,), ["operation"]),
    ("type-not-string", dict(operation="READ", props={"type": 7}, name="x"), (400,), ["type"]),
    ("create-body-not-map", dict(operation="CREATE", type="listener", name="l", body=["port", "0"]),
     (400,), ["body"]),
    ("attribute-names-not-list", dict(operation="QUERY", props={"entityType": "log"},
                                      body={"attributeNames": "name"}), (400,), ["attributeNames"]),
    ("attribute-names-not-strings", dict(operation="QUERY", props={"entityType": "log"},
                                         body={"attributeNames": [1, 2]}), (400,), ["attributeNames"]),
    ("read-without-name", dict(operation="READ", type="listener"), (400,), ["name"]),
    ("read-unknown-name", dict(operation="READ", type="listener", name="ghost"), (404,), ["ghost"]),
    ("read-unknown-identity", dict(operation="READ", identity="listener/999"), (404,), ["listener/999"]),
    ("update-unknown-name", dict(operation="UPDATE", type="log", name="ghost", body={"enable": "info+"}),
     (404,), ["ghost"]),
    ("delete-router", dict(operation="DELETE", type="router", identity="router/R1"), (501,), ["DELETE"]),
    ("create-router", dict(operation="CREATE", type="router", name="r2", body={"id": "R2"}),
     (400, 501), ["router"]),
    ("negative-offset", dict(operation="QUERY", props={"entityType": "log", "offset": -1}, body={}),
     (400,), ["offset"]),
    ("count-not-int", dict(operation="QUERY", props={"entityType": "log", "count": "ten"}, body={}),
     (400,), ["count"]),
    ("create-log", dict(operation="CREATE", type="log", name="lg", body={"module": "ROUTER"}),
     (501,), ["CREATE"]),
    ("get-log-negative-limit", dict(operation="GET-LOG", props={"limit": -1}), (400,), ["limit"]),
    ("get-attributes-unknown-type", dict(operation="GET-ATTRIBUTES", props={"entityType": "nothing"}),
     (400, 404), ["nothing"]),
    ("read-type-mismatch", dict(operation="READ", type="listener", identity="log/DEFAULT"), (400,),
     ["does not extend requested type"]),
    ("listener-bad-role", dict(operation="CREATE", type="listener", name="l",
                               body={**LISTEN, "port": "0", "role": "boss"}), (400,), ["role"]),
    ("create-without-type", dict(operation="CREATE", name="l", body={**LISTEN, "port": "0"}),
     (400,), ["type"]),
    ("create-with-identity", dict(operation="CREATE", type="listener", name="l",
                                  body={**LISTEN, "port": "0", "identity": "listener/77"}), (400,),
     ["identity"]),
]


_NO_CHECK = ("qdmesh checks the request and answers 400 naming what is wrong; qdrouterd 1.19 answers "
             "this one with 200 (it ignores the bad value)")
_PYTHON_ERROR = ("qdrouterd answers a malformed request with 500 and the text of a Python exception "
                 "from its agent (AttributeError), a server fault for a client's mistake")
# Cases where qdrouterd 1.19 answers otherwise (docs/routing.md, "Differences from qdrouterd").
C_ROUTER: Dict[str, Any] = {
    "wrong-type-int": pytest.mark.differs_from_c(
        "qdrouterd's 400 does not name the attribute (\"invalid literal for int() with base 10: 'big'\")"),
    "wrong-type-port": pytest.mark.differs_from_c(
        "qdrouterd creates a listener with port 'notaport' (201) and fails to bind it later; qdmesh refuses"),
    "operation-not-string": pytest.mark.c_router_bug(_PYTHON_ERROR),
    "type-not-string": pytest.mark.c_router_bug(_PYTHON_ERROR),
    "create-body-not-map": pytest.mark.c_router_bug(_PYTHON_ERROR),
    "attribute-names-not-list": pytest.mark.differs_from_c(
        "qdrouterd reads a string as a list of one-letter names and answers 404 'Unknown attributes'"),
    "attribute-names-not-strings": pytest.mark.differs_from_c(
        "qdrouterd answers 404 'Unknown attributes [1, 2]'; qdmesh 400"),
    "delete-router": pytest.mark.differs_from_c(
        "qdrouterd answers DELETE of org.apache.qpid.dispatch.router 403 Forbidden (501 when the type "
        "is named short); qdmesh answers 501 Not Implemented, as for every operation a type lacks"),
    "create-router": pytest.mark.differs_from_c(
        "qdrouterd answers CREATE of org.apache.qpid.dispatch.router 403 Forbidden; qdmesh 501"),
    "negative-offset": pytest.mark.differs_from_c(_NO_CHECK),
    "count-not-int": pytest.mark.differs_from_c(_NO_CHECK),
    "get-log-negative-limit": pytest.mark.differs_from_c(_NO_CHECK),
    "listener-bad-role": pytest.mark.differs_from_c(
        "qdrouterd's 400 names the enum's values but not the attribute 'role'"),
}


@pytest.mark.parametrize("kwargs,statuses,words", [pytest.param(*c[1:], id=c[0], marks=C_ROUTER.get(c[0], ()))
                                                   for c in CASES])
def test_bad_request_gets_4xx_with_description(mgmt: MgmtClient, router: Router, net: Net,
                                               kwargs: Dict[str, Any], statuses: tuple, words: list) -> None:
    kwargs = dict(kwargs)
    operation = kwargs.pop("operation", None)
    reply = mgmt.request(operation, **kwargs)
    assert reply.status in statuses, reply
    for word in words:
        assert word in reply.description, f"description does not name {word!r}: {reply}"
    assert reply.body is None or reply.body == {} or reply.body == [], reply
    assert len(mgmt.query("listener", ["name"])) == 1, "a refused request created a listener"
    assert_routing(net, router.url)


@pytest.mark.differs_from_c("qdrouterd looks the entity up before the operation and answers 404 for "
                             "a name it lacks; qdmesh answers an unknown operation 501 first")
def test_unknown_operation_is_not_implemented(mgmt: MgmtClient, router: Router, net: Net) -> None:
    # qdrouterd (and the AMQP management draft) answer an unsupported operation with
    # 501 Not Implemented, naming the operation.
    for kwargs in ({}, {"type": "listener", "name": "listener/1"}):
        reply = mgmt.request("FROBNICATE", **kwargs)
        assert reply.status == 501, reply
        assert "FROBNICATE" in reply.description
    assert_routing(net, router.url)


@pytest.mark.qdmesh_only("qdmesh's limit on a management request's size (413); qdrouterd has none")
def test_huge_request_gets_413(mgmt: MgmtClient, router: Router, net: Net) -> None:
    body = {**LISTEN, "port": str(free_port()), "padding": "x" * (1024 * 1024 + 100)}
    reply = mgmt.request("CREATE", type=LISTENER, name="huge", body=body, timeout=15)
    assert reply.status == 413, reply
    assert reply.description and reply.description != "413"
    assert "huge" not in [r["name"] for r in mgmt.query("listener", ["name"])]
    assert_routing(net, router.url)


@pytest.mark.differs_from_c("qdrouterd accepts a request it cannot answer (no reply-to) and drops it; "
                             "qdmesh rejects its delivery, so the sender learns")
def test_request_without_reply_to_is_rejected(mgmt: MgmtClient, router: Router, net: Net) -> None:
    m = mgmt.message("GET-TYPES", reply_to=None)
    outcome = mgmt.send(m)
    assert outcome.name == "rejected", outcome
    net.pump(0.2)
    assert not any(r.message.correlation_id == m.correlation_id for r in mgmt.receiver.received)
    assert mgmt.ok("GET-MGMT-NODES") == []
    assert_routing(net, router.url)


@pytest.mark.parametrize("payload", [
    b"this is not AMQP at all",
    b"\x00\x53\x77\xb1\xff\xff\xff\xff",          # amqp-value: a str32 claiming 4 GiB
    b"\x00\x53\x74\xc1\x05\x02\xa1\x09operation",  # application-properties cut short
], ids=["text", "huge-length", "cut-app-props"])
@pytest.mark.differs_from_c("qdrouterd accepts the delivery of a request it cannot decode; qdmesh "
                             "rejects it (amqp:decode-error)")
def test_garbage_body_is_rejected_and_router_keeps_serving(mgmt: MgmtClient, router: Router, net: Net,
                                                           payload: bytes) -> None:
    tag = mgmt.sender.send_raw(payload)
    net.wait(lambda: tag in mgmt.sender.outcomes, 5, "outcome of the garbage request")
    assert mgmt.sender.outcomes[tag].name == "rejected", mgmt.sender.outcomes[tag]
    assert mgmt.client.alive
    assert mgmt.ok("GET-MGMT-NODES") == []
    assert_routing(net, router.url)


@pytest.mark.differs_from_c("qdrouterd accepts the delivery of a request it cannot decode and "
                             "answers nothing; qdmesh answers it at its reply-to")
def test_a_truncated_request_with_a_reply_to_is_answered_with_the_reason(
        mgmt: MgmtClient, router: Router, net: Net) -> None:
    m = Message(body={"attributeNames": ["name"]}, properties={"operation": "QUERY"},
                reply_to=mgmt.reply_to, correlation_id="cut-short")
    tag = mgmt.sender.send_raw(bytes(m.encode())[:-7])
    net.wait(lambda: tag in mgmt.sender.outcomes, 5, "outcome of the truncated request")
    assert mgmt.sender.outcomes[tag].name == "accepted", mgmt.sender.outcomes[tag]
    reply = mgmt.wait_reply("cut-short")
    assert reply.status == 400 and "cannot be decoded" in reply.description, reply
    assert_routing(net, router.url)


def test_reply_to_without_route_does_not_hurt(mgmt: MgmtClient, router: Router, net: Net) -> None:
    m = mgmt.message("GET-TYPES", reply_to="nobody.listens.here")
    assert mgmt.send(m).name == "accepted"
    assert mgmt.ok("GET-MGMT-NODES") == []
    assert_routing(net, router.url)


def test_many_bad_requests_in_a_row(mgmt: MgmtClient, router: Router, net: Net) -> None:
    messages = [mgmt.message("READ", type="listener", name=f"ghost{i}") for i in range(30)]
    outcomes = send_and_settle(net, mgmt.sender, messages)
    assert {o.name for o in outcomes} == {"accepted"}
    replies = [mgmt.wait_reply(m.correlation_id) for m in messages]
    assert {r.status for r in replies} == {404}
    assert all(f"ghost{i}" in r.description for i, r in enumerate(replies))
    assert_routing(net, router.url)
