"""One address in its several forms, as qdrouterd 1.19 takes them: its address hash drops a
leading "/", a `scheme:/` or `scheme://host/` prefix, a `//host/` authority and one trailing
separator, so "/x", "x", "amqp:/x" and "x/" are one address (core/address_view.py). Consumers,
producers (by link target and by `to`), `qdstat -a`'s keys and address configuration all
take that view; what the clients wrote (a message's `to`) reaches the consumer unchanged.
Runs against both kinds of router (tests/interop/test_behaviour_c.py)."""

from __future__ import annotations

from typing import List

import pytest

from qdrouter.tools.management_client import ManagementClient

from .amqpclient import Net, msg, send_by_link_and_by_to
from .routerproc import Router, RouterFactory

ADDRESS_TYPE = "org.apache.qpid.dispatch.router.address"
# (what a consumer attaches to, the key qdrouterd shows for it)
CONSUMER_FORMS = [("/x", "M0x"), ("amqp:/x", "M0x"), ("x/", "M0x"), ("//host/x", "M0x"),
                  ("amqp://host:5672/x", "M0x"), ("/a.b.", "M0a.b"), ("x", "M0x")]
PRODUCER_FORMS = ["x", "/x", "amqp:/x", "x/", "//host/x"]


def mobile_keys(router: Router) -> List[str]:
    with ManagementClient(router.url[len("amqp://"):], timeout=5) as client:
        rows = client.query(ADDRESS_TYPE, ["key", "subscriberCount"])
    return sorted(str(row["key"]) for row in rows if row["subscriberCount"] and str(row["key"])[:2] == "M0")


@pytest.mark.parametrize("consumer, key", CONSUMER_FORMS)
def test_every_form_reaches_a_consumer_of_any_form(router: Router, net: Net, consumer: str, key: str) -> None:
    client = net.connect(router.url)
    receiver = client.receiver(consumer)
    net.wait(lambda: mobile_keys(router) == [key], 10, f"{consumer} listed as {key}")
    producers = [p for p in PRODUCER_FORMS if key == "M0x"] or ["a.b", "/a.b/"]
    assert send_by_link_and_by_to(net, client, producers, 10) == ["accepted"] * 2 * len(producers)
    net.wait(lambda: len(receiver.received) == 2 * len(producers), 10, "every message at the consumer")
    # The router routes by its view but leaves `to` as the client wrote it.
    assert [r.message.address for r in receiver.received] == [None] * len(producers) + producers


def test_address_configuration_matches_the_view(router_factory: RouterFactory, net: Net) -> None:
    """A prefix configured as "/fan" (or "fan") applies to "amqp:/fan/x" and "/fan/x": both
    routers match configuration against the address's view."""
    router = router_factory(addresses={"/fan": "multicast"})
    client = net.connect(router.url)
    receivers = [client.receiver("amqp:/fan/x"), client.receiver("/fan/x"), client.receiver("fan/x")]
    net.wait(lambda: mobile_keys(router) == ["M0fan/x"], 10, "three consumers of one address")
    sender = client.sender("fan/x", presettled=True)
    net.wait(lambda: sender.credit > 0, 10, "credit for fan/x")
    sender.send(msg("to all"))
    net.wait(lambda: all(r.bodies() == ["to all"] for r in receivers), 10, "a copy at each (multicast)")
