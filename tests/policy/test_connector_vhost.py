"""A connector's policyVhost: with vhost policy on, the router's outgoing connection (role
normal or route-container) is policed by that vhost's '$connector' group, as qdrouterd 1.19
does (policy.c qd_policy_amqp_open_connector): the links the peer (a broker, say) attaches
to the router are held to the group's rules, and a connector whose policyVhost has no such
group has its connection closed. Runs against both kinds of router
(tests/interop/test_behaviour_c.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from proton import Condition, Endpoint, Handler

from tests.policy.harness import PolicyRouter
from tests.policy.test_enforcement import ADMIN_VHOST, stats
from tests.router.amqpclient import Net
from tests.router.routerproc import free_port

BROKERS = "brokers.example"


class AttachingPeer(Handler):
    """A listening AMQP peer that, once the router's connection is open, attaches the given
    (direction, address) links to the router and records how each ends."""

    def __init__(self, net: Net, links: List[Tuple[str, str]]) -> None:
        super().__init__()
        self.port = free_port()
        self.wanted = links
        self.opened: List[Any] = []
        self.closed: Dict[str, Condition | None] = {}
        self.connection_error: Condition | None = None
        self.connections = 0
        net.container.acceptor("127.0.0.1", self.port, handler=self)

    def on_connection_remote_open(self, event: Any) -> None:
        self.connections += 1
        if event.connection.state & Endpoint.LOCAL_UNINIT:
            event.connection.open()
        for direction, address in self.wanted:
            name = f"{direction}-{address}"
            if direction == "send":
                event.container.create_sender(event.connection, address, name=name)
            else:
                event.container.create_receiver(event.connection, address, name=name)

    def on_connection_remote_close(self, event: Any) -> None:
        self.connection_error = event.connection.remote_condition

    def on_link_remote_open(self, event: Any) -> None:
        self.opened.append(event.link.name)

    def on_link_remote_close(self, event: Any) -> None:
        self.closed[event.link.name] = event.link.remote_condition


def config(peer_port: int, group: str, policy_vhost: str = BROKERS) -> str:
    return ("policy {\n    enableVhostPolicy: true\n}\n" + ADMIN_VHOST
            + f"vhost {{\n    hostname: {BROKERS}\n    groups: {{\n        {group}: {{\n"
            + "            remoteHosts: *\n            sources: feed.*\n            targets: in.*\n"
            + "        }\n    }\n}\n"
            + f"connector {{\n    name: broker\n    host: 127.0.0.1\n    port: {peer_port}\n"
            + "    role: route-container\n    saslMechanisms: ANONYMOUS\n"
            + f"    policyVhost: {policy_vhost}\n}}\n")


def test_a_connectors_peer_is_held_to_the_connector_group(policy_router: PolicyRouter, net: Net) -> None:
    peer = AttachingPeer(net, [("send", "in.x"), ("send", "secret.x"), ("receive", "feed.x"),
                               ("receive", "other.x")])
    router = policy_router(config(peer.port, "$connector"))
    net.wait(lambda: len(peer.closed) >= 2 and len(peer.opened) >= 4, 20, "the router's answers to the peer")
    net.pump(0.3)
    refused = {name: condition for name, condition in peer.closed.items()}
    assert set(refused) == {"send-secret.x", "receive-other.x"}, refused
    for condition in refused.values():
        assert condition is not None and condition.name == "amqp:unauthorized-access", condition
    row = stats(router, BROKERS)
    assert (row["senderDenied"], row["receiverDenied"]) == (1, 1)
    assert row["connectionsCurrent"] == 0  # a connector's connection is not one of the vhost's


def test_a_connector_without_a_connector_group_is_closed(policy_router: PolicyRouter, net: Net) -> None:
    peer = AttachingPeer(net, [])
    policy_router(config(peer.port, "others"))
    net.wait(lambda: peer.connection_error is not None, 20, "the router to close its connection")
    assert peer.connection_error.name == "amqp:resource-limit-exceeded", peer.connection_error
