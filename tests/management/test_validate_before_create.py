"""Management checks a request before it changes anything: a CREATE with a host no resolver
can encode, or a value outside the schema's range, gets 400 naming the field, and leaves no
entity behind (nothing in QUERY, its name free for the next CREATE)."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from tests.management.bulk import RawManagement, status
from tests.management.mgmt import ADDRESS, LISTENER, MgmtClient, assert_routing
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, free_port

LISTEN: Dict[str, Any] = {"saslMechanisms": "ANONYMOUS"}

BAD_HOSTS = [
    pytest.param("a..b", id="empty-label"),
    pytest.param("x" * 64 + ".example", id="64-character-label"),
    pytest.param("h" * 200_000, id="200KB"),
    pytest.param("a\x00b", id="nul"),
]

_C_CREATES_THEN_FAILS = pytest.mark.differs_from_c(
    "qdrouterd creates the listener (201), fails to listen on it later and keeps it, its name taken; "
    "qdmesh refuses the CREATE with 400 naming 'host'")


def _names(mgmt: MgmtClient, kind: str) -> List[str]:
    return [row["name"] for row in mgmt.query(kind, ["name"])]


@_C_CREATES_THEN_FAILS
@pytest.mark.parametrize("host", BAD_HOSTS)
def test_listener_with_unusable_host_is_refused_and_leaves_nothing(
        mgmt: MgmtClient, router: Router, net: Net, host: str) -> None:
    before = _names(mgmt, "listener")
    reply = mgmt.request("CREATE", type=LISTENER, name="badhost", timeout=15,
                         body={**LISTEN, "host": host, "port": str(free_port())})
    assert reply.status == 400, reply
    assert "'host'" in reply.description, reply
    assert len(reply.description) < 400, "the description echoes the whole value"
    assert _names(mgmt, "listener") == before
    # The name is free: a good listener may take it at once.
    port = free_port()
    mgmt.create(LISTENER, "badhost", {**LISTEN, "host": "127.0.0.1", "port": str(port)})
    net.connect(f"127.0.0.1:{port}").close()
    assert_routing(net, router.url)


@pytest.mark.parametrize("priority", [99, 10, pytest.param(-5, marks=pytest.mark.differs_from_c(
    "qdrouterd checks only that a priority is not above 9: it creates an address of priority -5"))])
def test_address_priority_outside_0_to_9_is_refused(mgmt: MgmtClient, router: Router,
                                                     priority: int) -> None:
    reply = mgmt.request("CREATE", type=ADDRESS, name="prio", body={"prefix": "prio", "priority": priority})
    assert reply.status == 400, reply
    # qdrouterd's words: "Priority value, if present, must be between 0 and QDR_MAX_PRIORITY".
    assert "priority" in reply.description.lower() and "between 0 and" in reply.description, reply
    assert "prio" not in _names(mgmt, "address")


@pytest.mark.parametrize("priority", [0, 9])
def test_address_priority_0_to_9_is_accepted(mgmt: MgmtClient, priority: int) -> None:
    created = mgmt.create(ADDRESS, "prio", {"prefix": "prio", "priority": priority})
    assert created["priority"] == priority


@pytest.mark.parametrize("attribute", ["ingressPhase", "egressPhase"])
def test_address_phase_outside_0_to_9_is_refused(mgmt: MgmtClient, attribute: str) -> None:
    reply = mgmt.request("CREATE", type=ADDRESS, name="ph", body={"prefix": "ph", attribute: 10})
    assert reply.status == 400, reply
    assert "phase" in reply.description.lower() and "between 0 and 9" in reply.description, reply
    assert "ph" not in _names(mgmt, "address")


def test_auto_link_phase_outside_0_to_9_is_refused(mgmt: MgmtClient) -> None:
    reply = mgmt.request("CREATE", type="org.apache.qpid.dispatch.router.config.autoLink", name="al",
                         body={"address": "q", "direction": "in", "phase": 12, "connection": "x"})
    assert reply.status == 400, reply
    assert "phase" in reply.description and "between 0 and 9" in reply.description, reply


def test_auto_link_create_reply_carries_what_query_says(mgmt: MgmtClient) -> None:
    autolink = "org.apache.qpid.dispatch.router.config.autoLink"
    created = mgmt.create(autolink, "al", {"address": "q1", "direction": "in", "connection": "broker"})
    read = mgmt.ok("READ", type=autolink, name="al")
    assert (created["phase"], created["operStatus"]) == (1, "inactive")
    assert {key: created[key] for key in ("phase", "operStatus", "lastError", "linkRef")} == \
        {key: read[key] for key in ("phase", "operStatus", "lastError", "linkRef")}
    out = mgmt.create(autolink, "al-out", {"address": "q2", "direction": "out", "connection": "broker"})
    assert (out["phase"], out["operStatus"]) == (0, "inactive")


@pytest.mark.qdmesh_only("qdmesh answers a request whose body nests deeper than its decoder "
                         "goes with 400 and the reason")
def test_a_too_deeply_nested_body_is_answered_with_a_description(router: Router, net: Net) -> None:
    mgmt = RawManagement(net, net.connect(router.url))
    nested: Any = "core"
    for _ in range(150):
        nested = [nested]
    reply = mgmt.request({"operation": "CREATE", "type": LISTENER, "name": "deep"},
                         {"host": "127.0.0.1", "port": nested})
    assert status(reply) == 400, reply.application_properties
    description = str((reply.application_properties or {}).get("statusDescription"))
    assert "body" in description and "nested" in description, description
    # Nested as deep in the application-properties: still answered at the reply-to.
    reply = mgmt.request({"operation": "QUERY", "deep": nested}, {})
    assert status(reply) == 400, reply.application_properties
    description = str((reply.application_properties or {}).get("statusDescription"))
    assert "cannot be decoded" in description and "nested" in description, description
    assert_routing(net, router.url)


@pytest.mark.differs_from_c("qdrouterd answers an unknown operation 501 without a suggestion")
def test_a_misspelt_operation_gets_a_did_you_mean(mgmt: MgmtClient) -> None:
    reply = mgmt.request("QEURY", props={"entityType": "listener"}, body={"attributeNames": []})
    assert reply.status == 501, reply
    assert "did you mean 'QUERY'" in reply.description, reply
