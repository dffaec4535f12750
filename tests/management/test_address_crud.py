"""CREATE / DELETE of router.config.address entities change distribution live, including
for addresses that already have consumers."""

from __future__ import annotations

from typing import List, Tuple

import pytest

from tests.management.mgmt import ADDRESS, MgmtClient
from tests.router.amqpclient import Net, ReceiverLink, SenderLink, msg, send_and_settle
from tests.router.routerproc import Router


def setup_pair(net: Net, router: Router, address: str) -> Tuple[List[ReceiverLink], SenderLink]:
    receivers = [net.connect(router.url).receiver(address) for _ in range(2)]
    snd = net.connect(router.url).sender(address)
    return receivers, snd


def deliver(net: Net, receivers: List[ReceiverLink], snd: SenderLink, label: str, n: int = 10) -> List[int]:
    """Send n messages; how many of them each receiver got."""
    before = [len(r.received) for r in receivers]
    outcomes = send_and_settle(net, snd, [msg(f"{label} {i}") for i in range(n)])
    assert {o.name for o in outcomes} == {"accepted"}, [o.name for o in outcomes]
    net.pump(0.2)
    return [len(r.received) - b for r, b in zip(receivers, before)]


def distribution_of(mgmt: MgmtClient, suffix: str) -> str:
    rows = [r for r in mgmt.query("router.address", ["name", "distribution"]) if r["name"].endswith(suffix)]
    assert len(rows) == 1, rows
    return str(rows[0]["distribution"])


@pytest.mark.differs_from_c("qdrouterd applies an address entity created or deleted at run time to addresses"
                            " that come later only; an address in use keeps its distribution. qdmesh applies"
                            " it at once, to addresses in use too")
def test_create_multicast_address_changes_existing_address_live(mgmt: MgmtClient, router: Router,
                                                                 net: Net) -> None:
    receivers, snd = setup_pair(net, router, "X.foo")
    counts = deliver(net, receivers, snd, "balanced")
    assert sum(counts) == 10 and all(c < 10 for c in counts), f"not balanced: {counts}"
    assert distribution_of(mgmt, "X.foo") == "balanced"

    created = mgmt.create("address", "x-multicast", {"prefix": "X", "distribution": "multicast"})
    assert created["type"] == ADDRESS
    assert created["prefix"] == "X" and created["distribution"] == "multicast"
    assert distribution_of(mgmt, "X.foo") == "multicast"
    counts = deliver(net, receivers, snd, "multicast")
    assert counts == [10, 10], f"not multicast after CREATE: {counts}"
    assert receivers[0].bodies()[-10:] == [f"multicast {i}" for i in range(10)]

    mgmt.delete("address", "x-multicast")
    assert distribution_of(mgmt, "X.foo") == "balanced"
    counts = deliver(net, receivers, snd, "balanced again")
    assert sum(counts) == 10 and all(c < 10 for c in counts), f"not balanced after DELETE: {counts}"


def test_created_address_applies_to_new_addresses_and_is_queryable(mgmt: MgmtClient, router: Router,
                                                                   net: Net) -> None:
    created = mgmt.create("router.config.address", "y-multicast",
                          {"prefix": "Y", "distribution": "multicast"})
    rows = mgmt.query("address", ["name", "prefix", "distribution", "identity"])
    assert {"name": "y-multicast", "prefix": "Y", "distribution": "multicast",
            "identity": created["identity"]} in rows
    assert mgmt.ok("READ", type="address", name="y-multicast")["prefix"] == "Y"
    receivers, snd = setup_pair(net, router, "Y.bar")
    assert deliver(net, receivers, snd, "m") == [10, 10]


@pytest.mark.differs_from_c("qdrouterd applies an address entity created or deleted at run time to addresses"
                            " that come later only; an address in use keeps its distribution. qdmesh applies"
                            " it at once, to addresses in use too")
def test_delete_configured_address_from_config_file(mgmt: MgmtClient, router: Router, net: Net) -> None:
    rows = mgmt.query("address", ["identity", "prefix"])
    multicast = [r["identity"] for r in rows if r["prefix"] == "multicast"]
    assert len(multicast) == 1
    receivers, snd = setup_pair(net, router, "multicast.cfg")
    assert deliver(net, receivers, snd, "m") == [10, 10]
    assert mgmt.request("DELETE", type="address", identity=multicast[0]).status == 204
    counts = deliver(net, receivers, snd, "b")
    assert sum(counts) == 10 and all(c < 10 for c in counts), counts


@pytest.mark.c_router_bug("qdrouterd creates an address with distribution 'everywhere' (201), where its "
                          "config file refuses a distribution outside the enum")
def test_create_address_with_bad_distribution_is_refused(mgmt: MgmtClient, router: Router, net: Net) -> None:
    reply = mgmt.request("CREATE", type="address", name="bad",
                         body={"prefix": "Z", "distribution": "everywhere"})
    assert reply.status == 400, reply
    assert "distribution" in reply.description
    assert "bad" not in [r["name"] for r in mgmt.query("address", ["name"])]
    receivers, snd = setup_pair(net, router, "Z.q")
    counts = deliver(net, receivers, snd, "z")
    assert sum(counts) == 10 and all(c < 10 for c in counts), counts


@pytest.mark.differs_from_c("qdrouterd refuses it too (400) but says only 'Already exists', not which prefix")
def test_create_address_with_an_existing_prefix_is_refused(mgmt: MgmtClient, router: Router,
                                                           net: Net) -> None:
    """A second address entity for the configured prefix 'closest' has no effect while the
    first exists (the longest-prefix match keeps the first): accepting it silently leaves
    management showing a distribution the router does not apply. qpid-dispatch 1.x refuses
    it with 400 "Address prefix/pattern conflicts with an existing entity"."""
    reply = mgmt.request("CREATE", type="address", name="dup",
                         body={"prefix": "closest", "distribution": "multicast"})
    assert reply.status == 400, reply
    assert "closest" in reply.description or "prefix" in reply.description, reply
    assert "dup" not in [r["name"] for r in mgmt.query("address", ["name"])]


@pytest.mark.differs_from_c("qdrouterd applies an address entity created or deleted at run time to addresses"
                            " that come later only; an address in use keeps its distribution. qdmesh applies"
                            " it at once, to addresses in use too")
def test_create_and_delete_a_pattern_address_live(mgmt: MgmtClient, router: Router, net: Net) -> None:
    """An address entity with a pattern ('*' one token, '#' any number) binds at once the
    addresses it matches, including those with consumers; deleting it unbinds them."""
    receivers, snd = setup_pair(net, router, "P.eu.orders")
    other_receivers, other_snd = setup_pair(net, router, "P.eu.invoices")
    reply = mgmt.request("CREATE", type="address", name="fanout",
                         body={"pattern": "P.*.orders", "distribution": "multicast"})
    assert reply.status == 201, reply
    assert deliver(net, receivers, snd, "multicast") == [10, 10]
    assert distribution_of(mgmt, "P.eu.orders") == "multicast"
    assert distribution_of(mgmt, "P.eu.invoices") == "balanced"
    counts = deliver(net, other_receivers, other_snd, "balanced")
    assert sum(counts) == 10 and all(c < 10 for c in counts), counts

    duplicate = mgmt.request("CREATE", type="address", name="same-tokens",
                             body={"pattern": "P/*/orders", "distribution": "closest"})
    assert duplicate.status == 400 and "pattern" in duplicate.description, duplicate

    assert mgmt.request("DELETE", type="address", name="fanout").status == 204
    assert distribution_of(mgmt, "P.eu.orders") == "balanced"
    counts = deliver(net, receivers, snd, "balanced again")
    assert sum(counts) == 10 and all(c < 10 for c in counts), counts
