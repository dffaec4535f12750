"""Every message on an anonymous sender link of a policed connection is checked against the
user's targets, as qdrouterd 1.19 checks it (router_node.c, qd_policy_approve_message_target):
a message whose address the user may not send to is rejected with amqp:unauthorized-access,
"policy violation on target", and goes nowhere. Management is an address like any other: a
user whose targets leave it out cannot reach it through an anonymous link in any of the
forms that route to it. Runs against both kinds of router (tests/interop/test_behaviour_c.py):
the users log in anonymously, so the C router needs no Cyrus SASL."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from proton import Message, symbol

from qdrouter.tools.management_client import ManagementClient
from tests.policy.harness import PolicyRouter, login
from tests.policy.test_enforcement import ADMIN_VHOST, stats
from tests.router.amqpclient import Net, Outcome, msg, send_and_settle
from tests.router.routerkind import router_kind
from tests.router.routerproc import Router

UNAUTHORIZED = "amqp:unauthorized-access"
VIOLATION = "policy violation on target"


def apps_vhost(targets: str = "targets: app.*", extra: str = "") -> str:
    """vhost v.example: anonymous users may consume anything, send only to ``targets``,
    through anonymous senders too."""
    return f"""
policy {{
    enableVhostPolicy: true
}}
vhost {{
    hostname: v.example
    groups: {{
        apps: {{
            users: anonymous
            remoteHosts: *
            sources: *
            {targets}
            allowAnonymousSender: true
            allowDynamicSource: true
{extra}
        }}
    }}
}}
{ADMIN_VHOST}
"""


def refused(outcome: Outcome) -> bool:
    return (outcome.name == "rejected" and outcome.condition is not None
            and outcome.condition.name == UNAUTHORIZED and outcome.condition.description == VIOLATION)


def target_denials(router: Router, expected: int) -> None:
    """The vhost counts no link denial for them (the link was allowed); qdmesh counts each
    refused message in targetDenied (qdrouterd counts them nowhere)."""
    row = stats(router)
    assert row["senderDenied"] == 0
    if router_kind() == "qdmesh":
        assert row["targetDenied"] == expected


@pytest.mark.parametrize("extra", ["", "            allowUserIdProxy: true"],
                         ids=["default", "user-id-proxy"])
def test_anonymous_sender_reaches_only_its_targets(policy_router: PolicyRouter, net: Net, extra: str) -> None:
    # With allowUserIdProxy true and no size limit, nothing else makes the router read a
    # message on its way: the target check alone must.
    router = policy_router(apps_vhost(extra=extra))
    client = login(net, router.url, vhost="v.example")
    secret = client.receiver("secret.x")
    app = client.receiver("app.x")
    sender = client.sender(None)
    assert not sender.remote_closed
    net.wait(lambda: sender.credit > 0, 10, "credit for the anonymous sender")
    outcomes = send_and_settle(net, sender, [msg("stolen", to="secret.x"), msg("fine", to="app.x"),
                                             msg("also stolen", to="amqp:/secret.x")])
    assert [refused(o) for o in outcomes] == [True, False, True], outcomes
    assert outcomes[1].name == "accepted"
    net.wait(lambda: len(app.received) == 1, 10, "the allowed message")
    net.pump(0.3)
    assert secret.bodies() == [] and app.bodies() == ["fine"]
    assert client.alive and not sender.remote_closed  # a refused message closes nothing
    target_denials(router, 2)


def test_presettled_messages_to_a_forbidden_address_are_dropped(policy_router: PolicyRouter,
                                                                net: Net) -> None:
    router = policy_router(apps_vhost())
    client = login(net, router.url, vhost="v.example")
    secret = client.receiver("secret.x")
    app = client.receiver("app.x")
    sender = client.sender(None, presettled=True)
    net.wait(lambda: sender.credit > 0, 10, "credit for the anonymous sender")
    for index in range(5):
        sender.send(msg(f"stolen {index}", to="secret.x"))
    sender.send(msg("fine", to="app.x"))
    net.wait(lambda: len(app.received) == 1, 10, "the allowed message after the refused ones")
    net.pump(0.3)
    assert secret.bodies() == []
    target_denials(router, 5)


def management_request(to: str, reply_to: str, name: str) -> Message:
    """A CREATE of an address entity, as qdmanage sends it."""
    return Message(address=to, reply_to=reply_to, body={"prefix": name, "distribution": "closest"},
                   properties={"operation": "CREATE", "name": name,
                               "type": "org.apache.qpid.dispatch.router.config.address"})


def created_by_test(router: Router) -> List[str]:
    """The address entities' prefixes the tests' requests name (the router's own defaults
    left out)."""
    with ManagementClient(router.url) as admin:
        rows = admin.query("router.config.address")
    return sorted(str(row.get("prefix")) for row in rows if str(row.get("prefix")).startswith(("evil", "ok")))


def test_management_is_out_of_reach_in_every_form(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(apps_vhost())
    client = login(net, router.url, vhost="v.example")
    replies = client.receiver(None, dynamic=True)
    assert replies.address
    sender = client.sender(None)
    net.wait(lambda: sender.credit > 0, 10, "credit for the anonymous sender")
    forms = ["$management", "_local/$management", f"_topo/0/{router.router_id}/$management",
             "amqp:/$management", "amqp:/_local/$management", f"amqp:/_topo/0/{router.router_id}/$management",
             f"_topo/0/{router.router_id}/app.x"]
    requests = [management_request(to, replies.address, f"evil{index}") for index, to in enumerate(forms)]
    outcomes = send_and_settle(net, sender, requests)
    assert [o.name for o in outcomes] == ["rejected"] * len(forms), outcomes
    assert all(refused(o) for o in outcomes), outcomes
    net.pump(0.3)
    assert replies.received == []  # no management answer: nothing was executed
    assert created_by_test(router) == []
    target_denials(router, len(forms))


def test_a_user_whose_targets_include_management_may_use_it(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(apps_vhost("targets: app.*, $management"))
    client = login(net, router.url, vhost="v.example")
    replies = client.receiver(None, dynamic=True)
    sender = client.sender(None)
    net.wait(lambda: sender.credit > 0, 10, "credit for the anonymous sender")
    requests = [management_request("$management", replies.address, "ok1"),
                management_request("_local/$management", replies.address, "evil")]
    outcomes = send_and_settle(net, sender, requests)
    assert outcomes[0].name == "accepted" and refused(outcomes[1]), outcomes
    net.wait(lambda: len(replies.received) == 1, 10, "management's answer")
    assert replies.received[0].message.properties["statusCode"] == 201
    assert created_by_test(router) == ["ok1"]


@pytest.mark.parametrize("targets, allowed, denied", [
    ("targets: mine.${user}", "mine.anonymous", "mine.someone"),
    # ('#' would start a comment in qdrouterd's config file)
    ("targetPattern: ${user}.*", "anonymous.a", "someone.a"),
])
def test_user_substitution_in_message_targets(policy_router: PolicyRouter, net: Net, targets: str,
                                              allowed: str, denied: str) -> None:
    router = policy_router(apps_vhost(targets))
    client = login(net, router.url, vhost="v.example")
    mine = client.receiver(allowed)
    sender = client.sender(None)
    net.wait(lambda: sender.credit > 0, 10, "credit for the anonymous sender")
    outcomes = send_and_settle(net, sender, [msg("mine", to=allowed), msg("theirs", to=denied)])
    assert outcomes[0].name == "accepted" and refused(outcomes[1]), outcomes
    net.wait(lambda: len(mine.received) == 1, 10, "the message to the user's own address")


def test_a_trusted_to_override_is_checked_too(policy_router: PolicyRouter, net: Net) -> None:
    """On a listener that keeps its clients' router annotations, x-opt-qd.to is what the
    message is routed by: that is the address checked."""
    router = policy_router(apps_vhost(), listener={"stripAnnotations": "no"})
    client = login(net, router.url, vhost="v.example")
    secret = client.receiver("secret.x")
    sender = client.sender(None)
    net.wait(lambda: sender.credit > 0, 10, "credit for the anonymous sender")
    annotations: Dict[Any, Any] = {symbol("x-opt-qd.to"): "secret.x"}
    outcomes = send_and_settle(net, sender, [Message(address="app.x", body="redirected",
                                                     annotations=annotations)])
    assert refused(outcomes[0]), outcomes
    net.pump(0.3)
    assert secret.bodies() == []
    target_denials(router, 1)


def test_unreadable_or_odd_addresses_pass_nothing(policy_router: PolicyRouter, net: Net) -> None:
    """A hostile anonymous sender: a message whose properties cannot be read is refused as
    undecodable, one whose to is blank matches no target (not even '*' in qdrouterd), a very
    long to is refused like any other; the connection and the router carry on."""
    router = policy_router(apps_vhost())
    client = login(net, router.url, vhost="v.example")
    app = client.receiver("app.x")
    sender = client.sender(None)
    net.wait(lambda: sender.credit > 0, 10, "credit for the anonymous sender")
    # A properties section (0x00 0x53 0x73) whose list claims more bytes than there are.
    broken = sender.send_raw(b"\x00\x53\x73\xd0\x00\x00\x10\x00\x00\x00\x00\x03\xa1\x05app.x")
    net.wait(lambda: broken in sender.outcomes, 10, "the broken message's outcome")
    assert sender.outcomes[broken].name == "rejected", sender.outcomes[broken]
    assert sender.outcomes[broken].condition is not None
    assert sender.outcomes[broken].condition.name == "amqp:decode-error"
    outcomes = send_and_settle(net, sender, [msg("blank", to=""), msg("long", to="secret." + "x" * 100_000),
                                             msg("fine", to="app.x")])
    assert [refused(o) for o in outcomes] == [True, True, False], outcomes
    net.wait(lambda: len(app.received) == 1, 10, "the allowed message")
    assert app.bodies() == ["fine"] and client.alive
