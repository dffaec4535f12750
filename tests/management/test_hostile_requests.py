"""Requests that are legal but huge: each gets an answer (or a 4xx naming the field), and the
router stays up and keeps routing. Their replies hold more values than proton's codec can,
which once killed the router (proton.DataException from encode_reply)."""

from __future__ import annotations

import pytest

from qdrouter.amqp import codec
from qdrouter.management.messages import MAX_REQUEST_BYTES
from tests.management.bulk import RawManagement, status
from tests.management.mgmt import ROUTER_ADDRESS, assert_routing
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, RouterFactory

VHOST = "org.apache.qpid.dispatch.vhost"
GROUPS = 10_000


# Vhost policy on, with a vhost that lets this test's anonymous clients do everything.
POLICY = """
policy {
    enableVhostPolicy: true
}
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


@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    return router_factory(extra_config=POLICY)


def test_a_vhost_with_10000_groups_is_created_and_read_back(router: Router, net: Net) -> None:
    mgmt = RawManagement(net, net.connect(router.url))
    groups = {f"group-{n:05}": {"users": f"user-{n:05}"} for n in range(GROUPS)}
    body = {"hostname": "big.example", "groups": groups}
    assert 250_000 < len(codec.encode_value(body)) < MAX_REQUEST_BYTES
    created = mgmt.request({"operation": "CREATE", "type": VHOST, "name": "big.example"}, body)
    assert status(created) == 201, created.application_properties
    assert len(created.body["groups"]) == GROUPS
    read = mgmt.request({"operation": "READ", "type": VHOST, "name": "big.example"}, None)
    assert status(read) == 200
    assert {name: settings["users"] for name, settings in read.body["groups"].items()} == \
        {name: settings["users"] for name, settings in groups.items()}
    assert router.is_running()
    assert_routing(net, router.url)


def test_a_query_naming_70000_attributes_is_answered_with_every_attribute(router: Router, net: Net) -> None:
    mgmt = RawManagement(net, net.connect(router.url))
    names = [f"attr{n:05}" for n in range(70_000)]
    assert len(codec.encode_value({"attributeNames": names})) > 550_000
    reply = mgmt.request({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                          "entityType": ROUTER_ADDRESS}, {"attributeNames": names})
    # As qdrouterd's agent: a list of 64 names or more gets every attribute of the type.
    assert status(reply) == 200
    every = mgmt.request({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                          "entityType": ROUTER_ADDRESS}, {"attributeNames": []})
    assert reply.body["attributeNames"] == every.body["attributeNames"]
    assert len(reply.body["results"]) == len(every.body["results"]) > 0
    assert router.is_running()
    assert_routing(net, router.url)


@pytest.mark.qdmesh_only("qdmesh's limit on a management request's size (413); qdrouterd has none")
def test_a_request_over_the_limit_is_refused_with_413(router: Router, net: Net) -> None:
    mgmt = RawManagement(net, net.connect(router.url))
    names = ["x" * 1000] * (MAX_REQUEST_BYTES // 1000 + 10)
    reply = mgmt.request({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                          "entityType": ROUTER_ADDRESS}, {"attributeNames": names})
    assert status(reply) == 413
    assert str(MAX_REQUEST_BYTES) in reply.application_properties["statusDescription"]
    assert router.is_running()
