"""Addresses whose distribution is `unavailable`, by their address entity or by the router's
`defaultDistribution`: an attach to one is refused with `amqp:not-found` ("Node not found"),
as qdrouterd refuses it; other addresses route as before."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from .amqpclient import ACCEPTED, Client, Net, msg, send_and_settle
from .fixtures import stop_checked
from .routerproc import Router, RouterFactory


@pytest.fixture
def default_unavailable(tmp_path: Path) -> Iterator[Router]:
    """A router whose defaultDistribution is unavailable, with `closest.` configured."""
    router = Router(tmp_path, addresses={"closest": "closest"})
    text = router.config_path.read_text()
    setting = "    mode: standalone\n    defaultDistribution: unavailable\n"
    router.config_path.write_text(text.replace("    mode: standalone\n", setting, 1))
    router.start()
    yield router
    stop_checked([router])


def assert_refused_not_found(client: Client, address: str) -> None:
    for link in (client.sender(address), client.receiver(address)):
        client.net.wait(lambda link=link: link.remote_closed, 10, f"the refusal of {address}")
        condition = link.remote_condition
        assert condition is not None and condition.name == "amqp:not-found", condition
        assert condition.description == "Node not found", condition


def test_address_entity_with_unavailable_distribution_refuses_attaches(router_factory: RouterFactory,
                                                                      net: Net) -> None:
    router = router_factory(addresses={"unavail": "unavailable", "closest": "closest"})
    client = net.connect(router.url)
    assert_refused_not_found(client, "unavail.x")
    receiver = client.receiver("closest.x")
    sender = client.sender("closest.x")
    assert [o.state for o in send_and_settle(net, sender, [msg("still routed")])] == [ACCEPTED]
    net.wait(lambda: receiver.bodies() == ["still routed"], 10, "the message on another address")


def test_default_distribution_unavailable_refuses_unconfigured_addresses(default_unavailable: Router,
                                                                         net: Net) -> None:
    client = net.connect(default_unavailable.url)
    assert_refused_not_found(client, "nowhere")
    receiver = client.receiver("closest.y")
    sender = client.sender("closest.y")
    assert [o.state for o in send_and_settle(net, sender, [msg("configured")])] == [ACCEPTED]
    net.wait(lambda: receiver.bodies() == ["configured"], 10, "the message on the configured address")
