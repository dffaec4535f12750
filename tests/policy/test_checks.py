"""One test per check qdrouterd 1.19's policy makes (policy.c, router_node.c), asserting what a
client sees (the refusal, its AMQP condition, the start of its description, which are
qdrouterd's words) and the vhost's counters. Clients log in anonymously (user
'anonymous'), so the tests run against the C router too without Cyrus SASL
(tests/interop/test_behaviour_c.py); the same checks with named users are in
test_enforcement.py. docs/policy.md has the table of every check."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, List

import pytest
from proton import Message
from proton.reactor import LinkOption

from qdrouter.tools.management_client import ManagementClient
from tests.linkroute.lrutil import both_ways, connector, wait_active
from tests.policy.harness import LoginClient, PolicyRouter, login
from tests.policy.test_enforcement import group, policy_body, stats
from tests.router.amqpclient import Net, ReceiverLink, SenderLink, msg, send_and_settle
from tests.router.routerkind import router_kind
from tests.router.routerproc import Router

LIMIT = "amqp:resource-limit-exceeded"
UNAUTHORIZED = "amqp:unauthorized-access"
CONNECTION_WORDS = "connection disallowed by local policy"
LINK_WORDS = "link disallowed by local policy"
_names = itertools.count(1)


def anonymous_group(**settings: Any) -> str:
    return policy_body(group("g", "anonymous", **settings))


def refused_open(net: Net, router: Router, vhost: str) -> LoginClient:
    client = login(net, router.url, vhost=vhost, expect_open=False)
    assert client.error is not None, "refused without an AMQP error"
    assert client.error.name == LIMIT, client.error
    assert str(client.error.description).startswith(CONNECTION_WORDS), client.error
    return client


def refused_link(net: Net, link: Any, condition: str) -> None:
    net.wait(lambda: link.remote_closed, 10, "the link's refusal")
    assert link.remote_condition is not None, "refused without an AMQP error"
    assert link.remote_condition.name == condition, link.remote_condition
    assert str(link.remote_condition.description).startswith(LINK_WORDS), link.remote_condition


class _Capability(LinkOption):
    """A terminus capability (a single symbol, as qdrouterd reads it) on the link's target
    (sender) or source (receiver)."""

    def __init__(self, symbol: str) -> None:
        self.symbol = symbol

    def apply(self, link: Any) -> None:
        terminus = link.target if link.is_sender else link.source
        terminus.capabilities.put_symbol(self.symbol)


def sender_with(client: LoginClient, address: str, capability: str) -> SenderLink:
    name = f"capable-sender-{next(_names)}"
    link = client.net.container.create_sender(client.conn, address, name=name,
                                              options=_Capability(capability))
    wrapper = SenderLink(client, link)
    client.links[name] = wrapper
    client.net.wait(lambda: wrapper.remote_opened or wrapper.remote_closed, 10, f"attach of {name}")
    return wrapper


def receiver_with(client: LoginClient, address: str, capability: str) -> ReceiverLink:
    name = f"capable-receiver-{next(_names)}"
    link = client.net.container.create_receiver(client.conn, address, name=name,
                                                options=_Capability(capability))
    wrapper = ReceiverLink(client, link, refill=True, settle=None)
    client.links[name] = wrapper
    link.flow(10)
    client.net.wait(lambda: wrapper.remote_opened or wrapper.remote_closed, 10, f"attach of {name}")
    return wrapper


# ---- open -------------------------------------------------------------------------------
def test_open_without_a_vhost_is_refused(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group())
    refused_open(net, router, "nowhere.example")
    with ManagementClient(router.url) as admin:
        # The policy entity's connectionsDenied counts the global limit's refusals; qdmesh
        # counts this one there too (qdrouterd counts it nowhere: no vhost took it).
        assert admin.query("policy")[0]["connectionsDenied"] == (1 if router_kind() == "qdmesh" else 0)


def test_open_by_a_user_in_no_group_is_refused(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(policy_body(group("g", "someone")))
    refused_open(net, router, "v.example")
    assert stats(router)["connectionsDenied"] == 1 and stats(router)["connectionsApproved"] == 0


def test_open_from_a_host_outside_remote_hosts_is_refused(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group(remoteHosts="192.0.2.1"))
    refused_open(net, router, "v.example")
    assert stats(router)["connectionsDenied"] == 1


@pytest.mark.parametrize("limit", ["maxConnections", "maxConnectionsPerUser", "maxConnectionsPerHost"])
def test_open_beyond_a_vhost_connection_limit_is_refused(policy_router: PolicyRouter, net: Net,
                                                         limit: str) -> None:
    router = policy_router(policy_body(group("g", "anonymous"), f"    {limit}: 1\n"))
    first = login(net, router.url, vhost="v.example")
    refused_open(net, router, "v.example")
    row = stats(router)
    assert (row["connectionsApproved"], row["connectionsDenied"], row["connectionsCurrent"]) == (1, 1, 1)
    first.close()
    net.wait(lambda: first.transport_closed, 10, "the first connection's close")
    net.wait(lambda: stats(router)["connectionsCurrent"] == 0, 10, "the router to count it gone")
    assert login(net, router.url, vhost="v.example").alive


def test_open_negotiates_frame_size_and_channel_max(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group(maxFrameSize=4096, maxSessions=3))
    client = login(net, router.url, vhost="v.example")
    assert client.conn.transport.remote_max_frame_size == 4096
    assert client.conn.transport.remote_channel_max == 2


# ---- attach -----------------------------------------------------------------------------
@pytest.mark.parametrize("direction", ["sender", "receiver"])
def test_links_beyond_max_senders_or_receivers_are_refused(policy_router: PolicyRouter, net: Net,
                                                           direction: str) -> None:
    setting = "maxSenders" if direction == "sender" else "maxReceivers"
    router = policy_router(anonymous_group(**{setting: 2}))
    client = login(net, router.url, vhost="v.example")
    open_one = client.sender if direction == "sender" else client.receiver
    links = [open_one(f"q{i}") for i in range(2)]
    assert not any(link.remote_closed for link in links)
    refused_link(net, open_one("q2"), LIMIT)
    links[0].close()
    net.wait(lambda: links[0].remote_closed, 10, "the router's answer to the detach")
    net.pump(0.2)
    assert not open_one("q3").remote_closed  # the closed link's place is free again
    row = stats(router)
    assert (row["senderDenied"], row["receiverDenied"]) == ((1, 0) if direction == "sender" else (0, 1))
    assert client.alive


def test_targets_refuse_a_sender(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group(targets="app.*, mine.${user}"))
    client = login(net, router.url, vhost="v.example")
    for allowed in ("app.x", "mine.anonymous"):
        assert not client.sender(allowed).remote_closed, allowed
    for denied in ("other.x", "mine.someone", "amqp:/app.x"):
        refused_link(net, client.sender(denied), UNAUTHORIZED)
    assert stats(router)["senderDenied"] == 3


def test_sources_refuse_a_receiver(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group(sources="feed.*"))
    client = login(net, router.url, vhost="v.example")
    assert not client.receiver("feed.x").remote_closed
    refused_link(net, client.receiver("secret.x"), UNAUTHORIZED)
    assert stats(router)["receiverDenied"] == 1


def test_anonymous_sender_needs_allow_anonymous_sender(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group())
    client = login(net, router.url, vhost="v.example")
    refused_link(net, client.sender(None), UNAUTHORIZED)
    assert stats(router)["senderDenied"] == 1


def test_dynamic_source_needs_allow_dynamic_source(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group())
    client = login(net, router.url, vhost="v.example")
    refused_link(net, client.receiver(None, dynamic=True), UNAUTHORIZED)
    assert stats(router)["receiverDenied"] == 1


def test_a_receiver_without_a_source_is_refused(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group())
    client = login(net, router.url, vhost="v.example")
    refused_link(net, client.receiver(None), UNAUTHORIZED)
    assert stats(router)["receiverDenied"] == 1


def test_waypoint_links_need_allow_waypoint_links(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group(allowWaypointLinks=False))
    client = login(net, router.url, vhost="v.example")
    refused_link(net, sender_with(client, "wp.x", "qd.waypoint"), UNAUTHORIZED)
    assert not client.sender("wp.x").remote_closed  # the same address without the capability
    assert stats(router)["senderDenied"] == 1


def test_fallback_links_need_allow_fallback_links(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group(allowFallbackLinks=False))
    client = login(net, router.url, vhost="v.example")
    refused_link(net, sender_with(client, "fb.x", "qd.fallback"), UNAUTHORIZED)
    assert not client.sender("fb.x").remote_closed
    assert stats(router)["senderDenied"] == 1


def test_waypoint_and_fallback_links_are_allowed_by_default(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group())
    client = login(net, router.url, vhost="v.example")
    assert not sender_with(client, "wp.x", "qd.waypoint").remote_closed
    assert not receiver_with(client, "fb.x", "qd.fallback").remote_closed
    assert stats(router)["senderDenied"] == 0 and stats(router)["receiverDenied"] == 0


# ---- transfer ---------------------------------------------------------------------------
def test_user_id_proxy_is_refused(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group())
    client = login(net, router.url, vhost="v.example")
    receiver = client.receiver("q")
    sender = client.sender("q")
    net.wait(lambda: sender.credit > 0, 10, "credit")
    outcomes = send_and_settle(net, sender, [Message(body=1, user_id=b"anonymous"),
                                             Message(body=2, user_id=b"someone-else"),
                                             Message(body=3)])
    assert [o.name for o in outcomes] == ["accepted", "rejected", "accepted"]
    condition = outcomes[1].condition
    assert condition is not None and condition.name == UNAUTHORIZED
    assert str(condition.description).startswith("user_id proxy violation"), condition
    net.wait(lambda: len(receiver.received) == 2, 10, "the two allowed messages")


def test_user_id_proxy_when_allowed(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(anonymous_group(allowUserIdProxy=True))
    client = login(net, router.url, vhost="v.example")
    receiver = client.receiver("q")
    sender = client.sender("q")
    net.wait(lambda: sender.credit > 0, 10, "credit")
    outcomes = send_and_settle(net, sender, [Message(body=1, user_id=b"someone-else")])
    assert outcomes[0].name == "accepted"
    net.wait(lambda: len(receiver.received) == 1, 10, "the message")


def test_max_message_size(policy_router: PolicyRouter, net: Net) -> None:
    """An oversized message is rejected with amqp:link:message-size-exceeded; qdrouterd then
    closes the link and the connection (amqp:connection:forced), and so does qdmesh."""
    router = policy_router(anonymous_group(maxMessageSize=1000))
    client = login(net, router.url, vhost="v.example")
    receiver = client.receiver("q")
    sender = client.sender("q")
    assert sender.link.remote_max_message_size == 1000
    net.wait(lambda: sender.credit > 0, 10, "credit")
    small = send_and_settle(net, sender, [Message(body="s" * 100)])
    assert small[0].name == "accepted"
    big = sender.send(Message(body="L" * 5000))
    net.wait(lambda: big in sender.outcomes or client.remote_closed, 10, "the big message's refusal")
    net.wait(lambda: client.remote_closed or client.transport_closed, 10, "the connection's close")
    outcome = sender.outcomes.get(big)
    assert outcome is not None and outcome.name == "rejected", outcome
    assert outcome.condition is not None and outcome.condition.name == "amqp:link:message-size-exceeded"
    assert client.error is not None and client.error.name == "amqp:connection:forced", client.error
    assert [r.message.body for r in receiver.received] == ["s" * 100]
    assert stats(router)["maxMessageSizeDenied"] == 1


def _bodies(receiver: ReceiverLink) -> List[Any]:
    return [r.message.body for r in receiver.received]


def test_messages_on_an_anonymous_link_are_checked_against_targets(policy_router: PolicyRouter,
                                                                   net: Net) -> None:
    router = policy_router(anonymous_group(targets="app.*", allowAnonymousSender=True))
    client = login(net, router.url, vhost="v.example")
    app = client.receiver("app.x")
    secret = client.receiver("secret.x")
    sender = client.sender(None)
    net.wait(lambda: sender.credit > 0, 10, "credit")
    outcomes = send_and_settle(net, sender, [msg("no", to="secret.x"), msg("yes", to="app.x")])
    assert [o.name for o in outcomes] == ["rejected", "accepted"]
    condition = outcomes[0].condition
    assert condition is not None and condition.name == UNAUTHORIZED
    assert condition.description == "policy violation on target"
    net.wait(lambda: len(app.received) == 1, 10, "the allowed message")
    assert _bodies(secret) == [] and _bodies(app) == ["yes"]


def test_link_routed_links_count_against_max_senders(policy_router: PolicyRouter, net: Net,
                                                      tmp_path: Path) -> None:
    """qdrouterd counts every sender its policy admitted, link-routed or not (container.c)."""
    workdir = tmp_path / "container"
    workdir.mkdir()
    container = Router(workdir, router_id="C").start()
    try:
        router = policy_router(anonymous_group(maxSenders=1) + connector("cont", container.port)
                               + both_ways("lr", connection="cont"))
        wait_active(router, 2)
        client = login(net, router.url, vhost="v.example")
        routed = client.sender("lr.x")
        assert routed.remote_opened and not routed.remote_closed, routed.remote_condition
        refused_link(net, client.sender("q"), LIMIT)
        routed.close()
        net.wait(lambda: routed.remote_closed, 10, "the detach of the routed sender")
        net.pump(0.3)
        assert not client.sender("q").remote_closed  # its place is free again
        assert stats(router)["senderDenied"] == 1
    finally:
        container.stop(check=True)


@pytest.mark.parametrize("allowed", [True, False])
def test_connection_link_routes_need_allow_dynamic_link_routes(policy_router: PolicyRouter, net: Net,
                                                               allowed: bool) -> None:
    router = policy_router(anonymous_group(allowDynamicSource=True, allowDynamicLinkRoutes=allowed))
    client = login(net, router.url, vhost="v.example")
    replies = client.receiver(None, dynamic=True)
    sender = client.sender("$management")
    net.wait(lambda: sender.credit > 0, 10, "credit toward management")
    request = Message(reply_to=replies.address, body={"pattern": "clr.#", "direction": "in"},
                      properties={"operation": "CREATE", "name": "clr",
                                  "type": "org.apache.qpid.dispatch.router.connection.linkRoute"})
    send_and_settle(net, sender, [request])
    net.wait(lambda: len(replies.received) == 1, 10, "management's answer")
    status = replies.received[0].message.properties["statusCode"]
    assert status == (201 if allowed else 403), replies.received[0].message.properties
