"""HELLO neighbour discovery with an explicit clock (a float passed in)."""

from __future__ import annotations

from qdrouter.protocol.messages import Hello
from qdrouter.protocol.neighbors import NeighborTable


def test_two_way_detection_and_expiry() -> None:
    table = NeighborTable("A", instance=1, hello_max_age=3.0)
    table.link_up("c1", 5)
    assert table.hello_for("c1").seen == []
    # B hears nobody yet: one-way, not a neighbour.
    assert table.on_hello("c1", Hello("B", seen=[]), now=0.0) == []
    assert table.hello_for("c1").seen == ["B"]
    # B now lists A: two-way -> up, with the connection's cost.
    (up,) = table.on_hello("c1", Hello("B", seen=["A"]), now=1.0)
    assert (up.up, up.router_id, up.conn_key, up.cost) == (True, "B", "c1", 5)
    assert table.on_hello("c1", Hello("B", seen=["A"]), now=2.0) == []
    assert table.expire(now=5.0) == []  # 3.0 s since the last HELLO: not yet older than max age
    (down,) = table.expire(now=5.01)
    assert (down.up, down.router_id) == (False, "B")
    assert table.neighbors() == {}
    assert table.hello_for("c1").seen == []


def test_link_down_drops_at_once_and_best_connection_wins() -> None:
    table = NeighborTable("A", instance=1, hello_max_age=3.0)
    table.link_up("c1", 5)
    table.link_up("c2", 2)
    table.on_hello("c1", Hello("B", seen=["A"]), now=0.0)
    table.on_hello("c2", Hello("B", seen=["A"]), now=0.0)
    assert table.neighbors() == {"B": ("c2", 2)}
    (change,) = table.link_down("c2")
    assert change.up and change.conn_key == "c1" and change.cost == 5
    (change,) = table.link_down("c1")
    assert not change.up


def test_peer_that_stops_seeing_us_is_one_way() -> None:
    table = NeighborTable("A", instance=1, hello_max_age=3.0)
    table.link_up("c1", 1)
    table.on_hello("c1", Hello("B", seen=["A"]), now=0.0)
    (down,) = table.on_hello("c1", Hello("B", seen=[]), now=1.0)  # B restarted
    assert not down.up


def test_duplicate_router_id_is_flagged() -> None:
    table = NeighborTable("A", instance=1, hello_max_age=3.0)
    table.link_up("c1", 1)
    table.on_hello("c1", Hello("A", seen=[], instance=1), now=0.0)  # our own echo: fine
    assert not table.duplicate_id_detected
    table.on_hello("c1", Hello("A", seen=[], instance=2), now=0.0)
    assert table.duplicate_id_detected
