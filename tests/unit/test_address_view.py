"""qdrouterd's hash form of an address, in which it advertises link-route destinations."""

from __future__ import annotations

import pytest

from qdrouter.core.address_view import hash_view
from qdrouter.core.link_route_table import LinkRoute, LinkRouteTable


@pytest.mark.parametrize("address, view", [
    ("/queue/x", "queue/x"), ("queue/x", "queue/x"), ("amqp:/queue/x", "queue/x"),
    ("amqp://host:5672/queue/x", "queue/x"), ("//host/queue/x", "queue/x"), ("a.b:c", "a.b:c"),
    # iterator.c's corners, as qdrouterd 1.19 showed them (qdstat -a) or its walk takes them:
    ("queue/x/", "queue/x"), ("a.b.", "a.b"), ("x//", "x/"), ("u:/t", "t"), ("a/b:/c", "c"),
    ("a::/b", "a::/b"), ("//host", "//host"), ("/", ""), ("x:/", "x:"), ("", ""),
    ("amqp:/_topo/0/R/temp.1", "_topo/0/R/temp.1"),
])
def test_hash_view_drops_what_qdrouterd_drops(address: str, view: str) -> None:
    assert hash_view(address) == view


def test_link_routes_are_advertised_and_matched_in_hash_form() -> None:
    """A qdrouterd advertises prefix "/queue" as "Cqueue"; an attach for "/queue/x" matches it,
    and qdmesh advertises its own "/exchange" as qdrouterd would, "Cexchange"."""
    assert LinkRoute("lr", "in", prefix="/exchange").advert_key == "Cexchange"
    table = LinkRouteTable()
    table.set_remote({"Cqueue": {"C1"}, "Dqueue": {"C1"}})
    assert table.find_remote("/queue/x", incoming=True) == {"C1"}
    assert table.find_remote("queue/x", incoming=False) == {"C1"}
    assert table.find_remote("/queues/x", incoming=True) == set()
