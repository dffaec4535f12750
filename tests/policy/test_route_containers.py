"""Route-container connections accepted on a listener are policed as user connections, as
qdrouterd 1.19 polices them (policy.c: its vhost check skips only inter-router connections;
server.c counts every accepted socket against maxConnections): an operator migrating from it
keeps the limits it set on brokers and tools that connect in. A listener's ``policyVhost``
names the vhost its connections are policed by, whatever hostname they open with (the
operator's own management listener uses one: operator/qdmesh_operator/render/conf.py).
Runs against both kinds of router (tests/interop/test_behaviour_c.py)."""

from __future__ import annotations

from tests.policy.harness import PolicyRouter, login, wait_until_only_management_connected
from tests.policy.test_enforcement import ADMIN_VHOST, group, stats
from tests.router.amqpclient import Net

BROKER = {"role": "route-container"}


def vhost(hostname: str, groups: str, attrs: str = "") -> str:
    return f"vhost {{\n    hostname: {hostname}\n{attrs}    groups: {{\n{groups}\n    }}\n}}\n"


def test_vhost_rules_apply_to_route_container_connections(policy_router: PolicyRouter, net: Net) -> None:
    body = ("policy {\n    enableVhostPolicy: true\n}\n" + ADMIN_VHOST
            + vhost("v.example", group("anyone", "anonymous", targets="allowed.*")))
    router = policy_router(body, extra_listeners={"broker": BROKER})
    broker = login(net, router.urls["broker"], vhost="v.example")
    assert not broker.sender("allowed.x").remote_closed
    refused = broker.sender("denied.x")
    net.wait(lambda: refused.remote_closed, 10, "the refusal of a target the vhost does not allow")
    assert stats(router)["connectionsCurrent"] == 1
    # A hostname no vhost has is refused there as on a normal listener.
    stranger = login(net, router.urls["broker"], vhost="unknown.example", expect_open=False)
    assert not stranger.alive


def test_route_container_connections_count_against_max_connections(policy_router: PolicyRouter,
                                                                   net: Net) -> None:
    router = policy_router("policy {\n    maxConnections: 2\n}\n", extra_listeners={"broker": BROKER})
    wait_until_only_management_connected(router.url)
    net.pump(0.3)  # the management query's connection closed: its place is free again
    brokers = [login(net, router.urls["broker"]) for _ in range(2)]
    assert not login(net, router.url, expect_open=False).alive
    assert not login(net, router.urls["broker"], expect_open=False).alive
    brokers[0].close()
    net.wait(lambda: brokers[0].transport_closed, 10, "the router to close the first broker connection")
    net.pump(0.2)
    assert login(net, router.url).alive


def test_a_listeners_policy_vhost_overrides_the_open_hostname(policy_router: PolicyRouter, net: Net) -> None:
    body = ("policy {\n    enableVhostPolicy: true\n}\n" + ADMIN_VHOST
            + vhost("ops.example", group("anyone", "anonymous"), "    maxConnections: 1\n"))
    router = policy_router(body, extra_listeners={"ops": {**BROKER, "policyVhost": "ops.example"}})
    # No vhost is named unknown.example: the listener's ops.example polices the connection.
    first = login(net, router.urls["ops"], vhost="unknown.example")
    assert not first.receiver("anything").remote_closed
    assert not login(net, router.urls["ops"], vhost="unknown.example", expect_open=False).alive
    assert stats(router, "ops.example")["connectionsCurrent"] == 1
