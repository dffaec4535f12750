"""A router leaving the network gracefully (RoutingEngine.withdraw, a drain's second phase):
the others route around it while it keeps its own routes, and its addresses go."""

from __future__ import annotations

from tests.unit.test_protocol_engine import Network


def _square() -> Network:
    # A-B-C and A-D-C, equal costs: the tie goes through B (the lower id).
    net = Network(["A", "B", "C", "D"], [("A", "B"), ("B", "C"), ("C", "D"), ("D", "A")])
    net.run(4)
    assert net.converged()
    return net


def test_the_others_route_around_a_withdrawn_router_which_keeps_its_own_routes() -> None:
    net = _square()
    assert net.engines["A"].routing_table()["C"] == ("B", 2)
    net.engines["B"].withdraw()
    net.run(1)
    assert net.engines["A"].routing_table()["C"] == ("D", 2)
    assert net.engines["C"].routing_table()["A"] == ("D", 2)
    # B is still reached directly (its connections stay up for what is in flight)...
    assert net.engines["A"].routing_table()["B"] == ("B", 1)
    # ...and B still forwards over its real links.
    assert net.engines["B"].routing_table() == {"A": ("A", 1), "C": ("C", 1), "D": ("A", 2)}
    assert net.engines["B"].link_state()["peers"] == {"A": 1, "C": 1}


def test_a_withdrawn_routers_addresses_go_and_new_ones_are_not_announced() -> None:
    net = _square()
    net.engines["B"].local_address_added("queue.a")
    net.engines["D"].local_address_added("queue.a")
    net.run(2)
    assert net.engines["A"].remote_addresses() == {"queue.a": {"B", "D"}}
    net.engines["B"].withdraw()
    net.engines["B"].local_address_added("queue.b")
    net.run(2)
    assert net.engines["A"].remote_addresses() == {"queue.a": {"D"}}
    assert net.engines["C"].remote_addresses() == {"queue.a": {"D"}}
