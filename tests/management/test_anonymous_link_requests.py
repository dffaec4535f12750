"""Large management requests on an anonymous link (no target; the request's ``to`` names
``$management``): answered exactly as on a link attached to ``$management``. A request large
enough to arrive over many transfers is still read whole before the agent sees it, and one
over the agent's limit gets 413 naming the limit, not a decoding error."""

from __future__ import annotations

import pytest

from qdrouter.amqp import codec
from qdrouter.amqp.data_path.stream_state import STREAM_START
from qdrouter.management.messages import MAX_REQUEST_BYTES
from tests.management.bulk import RawManagement, status
from tests.management.mgmt import ROUTER_ADDRESS, assert_routing
from tests.router.amqpclient import Net
from tests.router.routerproc import Router


def query(names: list[str]) -> tuple[dict[str, object], dict[str, object]]:
    return ({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
             "entityType": ROUTER_ADDRESS}, {"attributeNames": names})


def test_a_request_larger_than_a_streamed_message_is_answered_on_an_anonymous_link(
        router: Router, net: Net) -> None:
    mgmt = RawManagement(net, net.connect(router.url), anonymous=True)
    # 70,000 names: past the size at which the router streams a message, under the agent's limit.
    names = [f"attr{n:05}" for n in range(70_000)]
    size = len(codec.encode_value({"attributeNames": names}))
    assert STREAM_START < size < MAX_REQUEST_BYTES
    reply = mgmt.request(*query(names))
    # As qdrouterd's agent: a list of 64 names or more gets every attribute of the type.
    assert status(reply) == 200, reply.application_properties
    assert len(reply.body["results"]) > 0
    # The same request on a link attached to $management gets the same answer.
    named = RawManagement(net, net.connect(router.url)).request(*query(names))
    assert status(named) == 200
    assert reply.body["attributeNames"] == named.body["attributeNames"]
    assert router.is_running()
    assert_routing(net, router.url)


@pytest.mark.qdmesh_only("qdmesh's limit on a management request's size (413); qdrouterd has none")
def test_a_request_over_the_limit_on_an_anonymous_link_is_refused_with_413(router: Router, net: Net) -> None:
    mgmt = RawManagement(net, net.connect(router.url), anonymous=True)
    names = ["x" * 1000] * (MAX_REQUEST_BYTES // 1000 + 10)
    reply = mgmt.request(*query(names))
    assert status(reply) == 413, reply.application_properties
    assert str(MAX_REQUEST_BYTES) in reply.application_properties["statusDescription"]
    # The connection and its links still serve: a small request after it is answered.
    small = mgmt.request(*query(["name"]))
    assert status(small) == 200
    assert router.is_running()
    assert_routing(net, router.url)


@pytest.mark.qdmesh_only("qdmesh's limit on a management request's size (413); qdrouterd has none")
@pytest.mark.parametrize("anonymous", [False, True], ids=["named-link", "anonymous-link"])
def test_a_request_of_32_mib_is_refused_without_the_router_holding_it(
        router: Router, net: Net, anonymous: bool) -> None:
    mgmt = RawManagement(net, net.connect(router.url), anonymous=anonymous)
    assert status(mgmt.request(*query(["name"]))) == 200  # the agent's own memory is in use
    before = router.vm_rss_kb()
    properties, _ = query(["name"])
    reply = mgmt.request(properties, b"\0" * (32 * 1024 * 1024), timeout=120)
    assert status(reply) == 413, reply.application_properties
    description = reply.application_properties["statusDescription"]
    assert str(MAX_REQUEST_BYTES) in description
    # The size it names is the whole request's, though the router kept only its head.
    sizes = [int(word) for word in description.split() if word.isdigit()]
    assert max(sizes) > 32 * 1024 * 1024, description
    # Past the limit the rest of the request is read and dropped, not kept.
    assert router.vm_rss_kb() - before < 16 * 1024
    assert router.is_running()
