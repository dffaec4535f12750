"""The book's policy examples (2.6.5, examples 1 to 4) against a real router process."""

from __future__ import annotations

from proton import Message

from tests.policy.harness import PolicyRouter, login, refusal, users
from tests.router.amqpclient import Net, msg, send_and_settle

EXAMPLE_2 = """
policy {
    maxConnections: 100
    enableVhostPolicy: true
}
vhost {
    name: $default
    maxConnectionsPerUser: 10
    allowUnknownUser: true
    groups: {
        $default: {
            remoteHosts: *
            sources: *
            targets: *
        }
    }
}
"""

EXAMPLE_3 = """
policy {
    enableVhostPolicy: true
}
vhost {
    name: example.com
    allowUnknownUser: true
    groups: {
        admin: {
            users: alice, bob
            remoteHosts: 127.0.0.1, ::1
            sources: *
            targets: *
        },
        $default: {
            remoteHosts: *
            sources: news*, sports*, chat*
            targets: chat*
        }
    }
}
"""

EXAMPLE_3_ADMINS_ELSEWHERE = EXAMPLE_3.replace("remoteHosts: 127.0.0.1, ::1", "remoteHosts: 10.0.0.1, ::1")

EXAMPLE_4 = """
policy {
    enableVhostPolicy: true
}
vhost {
    name: traders.com
    groups: {
        traders: {
            users: trader-1, trader-2
            remoteHosts: *
            maxFrameSize: 10000
            maxSessionWindow: 5000000
            maxSessions: 1
            sources: *
            targets: *
        },
        feeds: {
            users: nyse-feed, nasdaq-feed
            remoteHosts: *
            maxFrameSize: 60000
            maxSessionWindow: 1200000000
            maxSessions: 3
            sources: *
            targets: *
        }
    }
}
"""


def test_example_1_no_policy_objects_allows_everything(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("", users=users("alice"))
    clients = [login(net, router.url, "alice", vhost=f"host{i}.example") for i in range(3)]
    anonymous = login(net, router.url, None, vhost="anything")
    receiver = clients[0].receiver("any/address")
    dynamic = anonymous.receiver(None, dynamic=True)
    sender = clients[1].sender("any/address")
    anonymous_sender = clients[2].sender(None)
    assert receiver.remote_opened and dynamic.remote_opened and anonymous_sender.remote_opened
    send_and_settle(net, sender, [msg(f"m{i}") for i in range(3)])
    net.wait(lambda: len(receiver.received) == 3, what="3 messages")


def test_example_2_connection_limits_for_all_users(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(EXAMPLE_2, users=users("alice", "bob"))
    alices = [login(net, router.url, "alice", vhost="whatever.example") for _ in range(10)]
    description = refusal(net, router.url, "alice", vhost="other.example")
    assert "maxConnectionsPerUser (10)" in description and "alice" in description
    # Another user still gets in, to any vhost (all use $default), with access to everything.
    bob = login(net, router.url, "bob", vhost="elsewhere.example")
    receiver = bob.receiver("q1")
    sender = alices[0].sender("q1")
    send_and_settle(net, sender, [msg("hello")])
    net.wait(lambda: len(receiver.received) == 1, what="the message")
    # A connection closed frees a place for alice.
    alices[1].close()
    net.pump(0.3)
    login(net, router.url, "alice", vhost="again.example")


def test_example_2_global_limit_of_100(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(EXAMPLE_2.replace("maxConnections: 100", "maxConnections: 12"),
                           users=users(*[f"user{i}" for i in range(14)]))
    for i in range(12):
        login(net, router.url, f"user{i}", vhost="v")
    description = refusal(net, router.url, "user12", vhost="v")
    assert "maxConnections (12)" in description


def test_example_3_admins_from_localhost_others_restricted(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(EXAMPLE_3, users=users("alice", "bob", "carol"))
    alice = login(net, router.url, "alice", vhost="example.com")
    assert alice.sender("secret/orders").remote_opened
    assert not alice.sender("secret/orders").remote_closed
    assert alice.receiver("anything").remote_opened
    carol = login(net, router.url, "carol", vhost="example.com")
    news = carol.receiver("news.today")
    assert news.remote_opened and not news.remote_closed
    chat_sender = carol.sender("chat.room1")
    assert not chat_sender.remote_closed
    refused_sender = carol.sender("news.today")
    net.wait(lambda: refused_sender.remote_closed, what="the sender to news to be refused")
    assert "targets do not allow 'news.today'" in str(refused_sender.remote_condition.description)
    refused_receiver = carol.receiver("secret/orders")
    net.wait(lambda: refused_receiver.remote_closed, what="the receiver from secret to be refused")
    assert "sources do not allow 'secret/orders'" in str(refused_receiver.remote_condition.description)
    # The allowed links carry messages.
    chat_receiver = alice.receiver("chat.room1")
    send_and_settle(net, chat_sender, [msg("hi")])
    net.wait(lambda: len(chat_receiver.received) == 1, what="chat message")


def test_example_3_admin_from_another_host_is_denied(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(EXAMPLE_3_ADMINS_ELSEWHERE, users=users("alice", "carol"))
    description = refusal(net, router.url, "alice", vhost="example.com")
    assert "remoteHosts does not allow '127.0.0.1'" in description and "'admin'" in description
    login(net, router.url, "carol", vhost="example.com")


def test_example_4_memory_limits_are_negotiated(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router(EXAMPLE_4, users=users("trader-1", "nyse-feed", "stranger"))
    trader = login(net, router.url, "trader-1", vhost="traders.com")
    transport = trader.conn.transport
    assert transport.remote_max_frame_size == 10000
    assert transport.remote_channel_max == 0  # one session: channel 0 only
    feed = login(net, router.url, "nyse-feed", vhost="traders.com")
    assert feed.conn.transport.remote_max_frame_size == 60000
    assert feed.conn.transport.remote_channel_max == 2
    # A user in no group is denied (allowUnknownUser defaults to false).
    assert "allowUnknownUser is false" in refusal(net, router.url, "stranger", vhost="traders.com")
    # Messages larger than a frame still pass (they are split into 10000-byte frames).
    receiver = feed.receiver("prices")
    sender = trader.sender("prices")
    send_and_settle(net, sender, [Message(body="x" * 50000)])
    net.wait(lambda: len(receiver.received) == 1, what="the large message")
