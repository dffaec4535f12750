"""Each policy enforcement point against a real router process with real proton clients:
open, begin, attach, transfer; denials carry an AMQP error naming the rule and are counted
in vhostStats."""

from __future__ import annotations

import socket
from typing import Any, Dict, List

import pytest
from proton import Message, Transport, uint

from qdrouter.tools.management_client import ManagementClient
from tests.policy import rawamqp
from tests.policy.harness import (
    LoginClient,
    PolicyRouter,
    login,
    refusal,
    users,
)
from tests.router.amqpclient import Net, msg, send_and_settle
from tests.router.routerproc import Router

# The management client connects anonymously to the vhost '127.0.0.1' (its URL's host).
ADMIN_VHOST = """
vhost {
    hostname: 127.0.0.1
    groups: {
        admins: {
            users: anonymous
            remoteHosts: *
            sources: *
            targets: *
            allowDynamicSource: true
        }
    }
}
"""


def policy_body(groups: str, vhost_attrs: str = "", policy_attrs: str = "") -> str:
    return f"""
policy {{
    enableVhostPolicy: true
{policy_attrs}
}}
vhost {{
    hostname: v.example
{vhost_attrs}
    groups: {{
{groups}
    }}
}}
{ADMIN_VHOST}
"""


def group(name: str, members: str, **settings: Any) -> str:
    values = {"users": members, "remoteHosts": "*", "sources": "*", "targets": "*"}
    values.update({key: str(value).lower() if isinstance(value, bool) else str(value)
                   for key, value in settings.items()})
    body = "\n".join(f"            {key}: {value}" for key, value in values.items())
    return f"        {name}: {{\n{body}\n        }}"


def stats(router: Router, hostname: str = "v.example") -> Dict[str, Any]:
    with ManagementClient(router.url) as client:
        rows = client.query("vhostStats")
    found = [row for row in rows if row["hostname"] == hostname]
    assert found, f"no vhostStats for {hostname}: {rows}"
    return dict(found[0])


# ---- open -------------------------------------------------------------------------------
def test_open_limits_per_user_host_and_vhost(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(policy_body(group("g", "u1, u2, u3"), "    maxConnections: 3\n"
                                       "    maxConnectionsPerUser: 2\n"), users=users("u1", "u2", "u3", "u4"))
    login(net, router.url, "u1", "v.example")
    login(net, router.url, "u1", "v.example")
    assert "maxConnectionsPerUser (2) reached for user 'u1'" in refusal(net, router.url, "u1", "v.example")
    login(net, router.url, "u2", "v.example")
    assert "maxConnections (3) reached" in refusal(net, router.url, "u3", "v.example")
    assert "user 'u4'" in refusal(net, router.url, "u4", "v.example")
    row = stats(router)
    assert row["connectionsApproved"] == 3 and row["connectionsDenied"] == 3
    assert row["connectionsCurrent"] == 3
    assert row["perUserState"] == {"u1": 2, "u2": 1}
    assert row["perHostState"] == {"127.0.0.1": 3}


def test_per_host_limit_and_remote_hosts(policy_router: PolicyRouter, net: Net) -> None:
    body = policy_body(group("near", "u1", maxConnectionsPerHost=1) + ",\n"
                       + group("far", "u2", remoteHosts="192.0.2.0-192.0.2.255"))
    router = policy_router(body, users=users("u1", "u2"))
    login(net, router.url, "u1", "v.example")
    description = refusal(net, router.url, "u1", "v.example")
    assert "maxConnectionsPerHost (1) reached for host '127.0.0.1'" in description
    assert "remoteHosts does not allow '127.0.0.1'" in refusal(net, router.url, "u2", "v.example")


@pytest.mark.differs_from_c("over the global maxConnections qdrouterd closes the socket at once, before any "
                            "AMQP frame, so the client gets no error; qdmesh opens and closes with "
                            "amqp:resource-limit-exceeded naming maxConnections (docs/policy.md)")
def test_global_limit_refuses_with_an_amqp_error_and_counts(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("policy {\n    maxConnections: 3\n}\n")
    clients = [login(net, router.url) for _ in range(3)]
    assert "maxConnections (3)" in refusal(net, router.url)
    # The router counts a connection gone when it closes the socket: the client's transport
    # closing is the sign (waiting for the close frame alone would be too early).
    clients[0].close()
    net.wait(lambda: clients[0].transport_closed, 10, "the router to close the first connection")
    login(net, router.url)
    with_management_room = clients[1]
    with_management_room.close()
    net.wait(lambda: with_management_room.transport_closed, 10, "the router to close the second connection")
    with ManagementClient(router.url) as client:
        policy = client.query("policy")[0]
    assert policy["connectionsDenied"] == 1 and policy["totalDenials"] == 1
    assert policy["connectionsProcessed"] >= 5


# ---- begin ------------------------------------------------------------------------------
def traced_begins(client: LoginClient) -> List[str]:
    """The begin frames the router sends from now on, as proton's frame trace prints them."""
    frames: List[str] = []
    transport = client.conn.transport
    transport.tracer = lambda _transport, line: frames.append(line)
    transport.trace(Transport.TRACE_FRM)
    return frames


def test_sessions_beyond_max_sessions_are_refused(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(policy_body(group("g", "u1", maxSessions=2)), users=users("u1"))
    client = login(net, router.url, "u1", "v.example")
    assert client.conn.transport.remote_channel_max == 1
    sessions = [client.conn.session() for _ in range(3)]
    for session in sessions:
        session.open()
    net.wait(lambda: all(s.state & s.REMOTE_ACTIVE for s in sessions[:2]), what="two sessions")
    net.pump(0.5)
    # The third cannot begin: channel-max 1 leaves the client no channel for it (proton's
    # client logs "unable to find an open available channel"). The router's own count, for
    # peers that ignore channel-max, is in the engine tests.
    assert sessions[2].state & sessions[2].REMOTE_UNINIT
    assert client.alive



def three_begins() -> bytes:
    """Begins on channels 0, 1 and 2: channel 2 is above a channel-max of 1."""
    return b"".join(rawamqp.frame(channel, rawamqp.BEGIN, [None, uint(0), uint(100), uint(100)])
                    for channel in range(3))


@pytest.mark.differs_from_c("a peer that ignores channel-max and begins a third session beyond maxSessions "
                            "(2): qdrouterd answers the first two begins and nothing more within 5 s; qdmesh"
                            " closes the connection with amqp:resource-limit-exceeded")
def test_sessions_beyond_max_sessions_close_a_peer_ignoring_channel_max(policy_router: PolicyRouter) -> None:
    router = policy_router(policy_body(group("g", "anonymous", maxSessions=2)))
    with socket.create_connection(("127.0.0.1", router.port), timeout=5) as sock:
        # One write: the begins arrive with the open, before the router has negotiated a
        # channel-max, so proton accepts all three and the router's own count refuses one.
        sock.sendall(rawamqp.AMQP_HEADER + rawamqp.frame(0, rawamqp.OPEN, ["raw", "v.example"])
                     + three_begins())
        frames = rawamqp.read_frames(sock, 5.0)
    performatives = [(channel, int(f.descriptor)) for channel, f in frames]
    assert performatives == [(0, rawamqp.OPEN), (0, rawamqp.BEGIN), (1, rawamqp.BEGIN), (0, rawamqp.CLOSE)]
    assert frames[0][1].value[3] == 1  # the channel-max the peer ignored
    error = frames[-1][1].value[0]
    assert error.value[0] == "amqp:resource-limit-exceeded"
    assert "maxSessions (2) reached" in error.value[1]
    assert stats(router)["sessionDenied"] == 1


def test_begin_above_the_negotiated_channel_max_is_a_framing_error(policy_router: PolicyRouter,
                                                                   net: Net) -> None:
    router = policy_router(policy_body(group("g", "anonymous", maxSessions=2)))
    with socket.create_connection(("127.0.0.1", router.port), timeout=5) as sock:
        sock.sendall(rawamqp.AMQP_HEADER + rawamqp.frame(0, rawamqp.OPEN, ["raw", "v.example"]))
        opened = rawamqp.await_first_frame(sock, 5.0)
        # After the router's open, proton's transport itself refuses channel 2.
        sock.sendall(three_begins())
        frames = rawamqp.read_frames(sock, 5.0, opened)
    assert frames[0][1].value[3] == 1
    assert int(frames[-1][1].descriptor) == rawamqp.CLOSE
    error = frames[-1][1].value[0]
    assert error.value[0] == "amqp:connection:framing-error"
    assert "remote channel 2 is above negotiated channel_max 1" in error.value[1]
    assert stats(router)["sessionDenied"] == 0  # proton's refusal, not the policy's count
    assert login(net, router.url).alive  # the router serves the next peer

def test_session_window_is_in_octets(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(policy_body(group("g", "anonymous", maxFrameSize=2048, maxSessionWindow=8192)))
    client = login(net, router.url, vhost="v.example")
    assert client.conn.transport.remote_max_frame_size == 2048
    frames = traced_begins(client)
    receiver = client.receiver("big")
    sender = client.sender("big")
    # maxSessionWindow is the session's incoming capacity in octets (qdrouterd 1.19's
    # schema): 8192 octets of 2048-octet frames, an incoming window of 4 frames.
    begins = [line for line in frames if "<- @begin" in line]
    assert begins and all("incoming-window=0x4," in line for line in begins), begins
    # 10 messages of 20 kB each still cross a session whose window is 4 frames of 2 kB.
    send_and_settle(net, sender, [Message(body="y" * 20000) for _ in range(10)], timeout=20)
    net.wait(lambda: len(receiver.received) == 10, what="10 large messages")


# ---- attach -----------------------------------------------------------------------------
def test_attach_rules(policy_router: PolicyRouter, net: Net) -> None:
    body = policy_body(group("g", "u1", maxSenders=2, maxReceivers=1, targets="out.*, tmp_${user}",
                             sources="in.*, ${user}-home-*"))
    router = policy_router(body, users=users("u1"))
    client = login(net, router.url, "u1", "v.example")

    def refused(link: Any, text: str) -> None:
        net.wait(lambda: link.remote_closed, what=f"refusal ({text})")
        assert link.remote_condition is not None and text in str(link.remote_condition.description)

    refused(client.sender("elsewhere"), "targets do not allow 'elsewhere'")
    refused(client.sender("tmp_u2"), "targets do not allow 'tmp_u2'")
    refused(client.sender(None), "allowAnonymousSender is false")
    ok = [client.sender("out.a"), client.sender("tmp_u1")]
    assert not any(link.remote_closed for link in ok)
    refused(client.sender("out.b"), "maxSenders (2) reached")
    refused(client.receiver(None, dynamic=True), "allowDynamicSource is false")
    refused(client.receiver("u2-home-x"), "sources do not allow 'u2-home-x'")
    home = client.receiver("u1-home-inbox")
    assert not home.remote_closed
    refused(client.receiver("in.x"), "maxReceivers (1) reached")
    home.close()
    # The router frees the receiver's place as it handles the detach it answers.
    net.wait(lambda: home.remote_closed, 10, "the router's detach of the closed receiver")
    assert not client.receiver("in.x").remote_closed
    row = stats(router)
    assert row["senderDenied"] == 4 and row["receiverDenied"] == 3
    assert client.alive


def test_dynamic_source_and_anonymous_sender_when_allowed(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(policy_body(group("g", "u1", allowDynamicSource=True, allowAnonymousSender=True)),
                           users=users("u1"))
    client = login(net, router.url, "u1", "v.example")
    reply = client.receiver(None, dynamic=True)
    assert reply.remote_opened and not reply.remote_closed and reply.address
    sender = client.sender(None)
    send_and_settle(net, sender, [msg("to the reply address", to=reply.address)])
    net.wait(lambda: len(reply.received) == 1, what="the message through the anonymous sender")


def test_management_is_a_target_like_any_other(policy_router: PolicyRouter, net: Net) -> None:
    body = policy_body(group("ops", "u1", allowDynamicSource=True) + ",\n"
                       + group("apps", "u2", targets="app.*", allowDynamicSource=True))
    router = policy_router(body, users=users("u1", "u2"))
    for user, allowed in (("u1", True), ("u2", False)):
        client = login(net, router.url, user, "v.example")
        link = client.sender("$management")
        net.pump(0.2)
        assert link.remote_closed is not allowed, user
        if not allowed:
            assert "targets do not allow '$management'" in str(link.remote_condition.description)


# ---- transfer ---------------------------------------------------------------------------
def test_max_message_size(policy_router: PolicyRouter, net: Net) -> None:
    """Rejected, then the link and the connection closed (amqp:connection:forced), as
    qdrouterd does (router_node.c)."""
    router = policy_router(policy_body(group("g", "u1", maxMessageSize=1000)), users=users("u1"))
    client = login(net, router.url, "u1", "v.example")
    receiver = client.receiver("q")
    sender = client.sender("q")
    assert sender.link.remote_max_message_size == 1000
    assert send_and_settle(net, sender, [Message(body="s" * 100)])[0].name == "accepted"
    rejected = send_and_settle(net, sender, [Message(body="L" * 5000)])[0]
    assert rejected.name == "rejected"
    assert rejected.condition is not None and rejected.condition.name == "amqp:link:message-size-exceeded"
    assert "maxMessageSize (1000)" in str(rejected.condition.description)
    net.wait(lambda: client.remote_closed, 10, "the connection's close")
    assert client.error is not None and client.error.name == "amqp:connection:forced"
    assert [r.message.body for r in receiver.received] == ["s" * 100]
    assert stats(router)["maxMessageSizeDenied"] == 1


def test_oversized_streaming_message_is_refused_while_it_arrives(policy_router: PolicyRouter,
                                                                 net: Net) -> None:
    router = policy_router(policy_body(group("g", "u1", maxMessageSize=100000, maxFrameSize=4096)),
                           users=users("u1"))
    client = login(net, router.url, "u1", "v.example")
    client.receiver("q")
    sender = client.sender("q")
    tag = sender.send(Message(body="H" * 2_000_000))
    net.wait(lambda: client.remote_closed, 20, "the connection to close")
    assert client.error.name == "amqp:connection:forced"
    assert sender.remote_closed
    outcome = sender.outcomes.get(tag)
    assert outcome is not None and outcome.name == "rejected", outcome
    # The router serves the next connection.
    again = login(net, router.url, "u1", "v.example")
    receiver = again.receiver("q2")
    send_and_settle(net, again.sender("q2"), [msg("still served")])
    net.wait(lambda: len(receiver.received) == 1, what="a message after the refusal")
    assert stats(router)["maxMessageSizeDenied"] == 1


def test_user_id_must_be_the_authenticated_user(policy_router: PolicyRouter, net: Net) -> None:
    body = policy_body(group("strict", "u1") + ",\n" + group("proxy", "u2", allowUserIdProxy=True))
    router = policy_router(body, users=users("u1", "u2"))
    results: List[List[str]] = []
    for user in ("u1", "u2"):
        client = login(net, router.url, user, "v.example")
        receiver = client.receiver(f"q.{user}")
        sender = client.sender(f"q.{user}")
        outcomes = send_and_settle(net, sender, [Message(body=1, user_id=user.encode()),
                                                 Message(body=2, user_id=b"someone-else"),
                                                 Message(body=3)])
        results.append([outcome.name for outcome in outcomes])
        if user == "u1":
            assert "is not the authenticated user 'u1'" in str(outcomes[1].condition.description)
        expected = 2 if user == "u1" else 3
        net.wait(lambda r=receiver, n=expected: len(r.received) == n, what="allowed messages")
    assert results == [["accepted", "rejected", "accepted"], ["accepted", "accepted", "accepted"]]
    assert stats(router)["userIdDenied"] == 1
