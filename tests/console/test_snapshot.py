"""The console's mesh view computed from management rows (no I/O): links and costs from the
routers' node tables, attachments, address totals and rates."""

from __future__ import annotations

from typing import Any, Dict, List

from qdrouter.console.snapshot import RouterData, build_snapshot


def node(rid: str, next_hop: Any, cost: int, peers: List[str]) -> Dict[str, Any]:
    return {"id": rid, "nextHop": next_hop, "cost": cost, "linkState": peers}


def routers(orders_in: int, orders_out: int) -> Dict[str, RouterData]:
    a = RouterData("A", {
        "general": [{"id": "A", "mode": "interior", "connectionCount": 3}],
        "nodes": [node("B", None, 1, ["A", "C"]), node("C", "B", 2, ["B"])],
        "connections": [
            {"identity": "1", "role": "inter-router", "container": "B"},
            {"identity": "2", "role": "route-container", "container": "broker-1", "host": "h:1"},
            {"identity": "3", "role": "normal", "container": "qdmesh-console-1234"},
            {"identity": "4", "role": "normal", "container": "app"},
        ],
        "links": [
            {"identity": "7", "linkType": "endpoint", "linkDir": "in", "owningAddr": "M0orders",
             "connectionId": 4, "deliveryCount": orders_in},
            {"identity": "8", "linkType": "endpoint", "linkDir": "in", "owningAddr": "M0$management",
             "connectionId": 3, "deliveryCount": 5},
            {"identity": "9", "linkType": "inter-router", "linkDir": "out", "connectionId": 1,
             "deliveryCount": orders_in},
        ],
        "addresses": [
            {"key": "M0orders", "distribution": "balanced", "subscriberCount": 0,
             "deliveriesIngress": orders_in, "deliveriesTransit": orders_in, "deliveriesEgress": 0},
            {"key": "M0$management", "inProcess": 1, "deliveriesIngress": 40},
            {"key": "Ltemp.x", "deliveriesIngress": 3},
        ],
    })
    # Ingress counts only what enters the mesh at a router: B and C pass on and deliver.
    b = RouterData("B", {"nodes": [node("A", None, 1, ["B"]), node("C", None, 1, ["B"])],
                         "addresses": [{"key": "M0orders", "subscriberCount": 0,
                                        "deliveriesIngress": 0, "deliveriesTransit": orders_in}]})
    c = RouterData("C", {"addresses": [{"key": "M0orders", "subscriberCount": 2,
                                        "deliveriesIngress": 0, "deliveriesEgress": orders_out}]})
    return {"A": a, "B": b, "C": c}


def test_links_costs_attachments_and_addresses() -> None:
    view, details, _ = build_snapshot("A", routers(10, 10), None, 100.0)
    assert [r["id"] for r in view["routers"]] == ["A", "B", "C"]
    assert view["edges"] == [{"a": "A", "b": "B", "cost": 1, "roundTrip": None, "probeFailures": None},
                             {"a": "B", "b": "C", "cost": 1, "roundTrip": None, "probeFailures": None}]
    assert view["attachments"] == [
        {"router": "A", "kind": "container", "name": "broker-1", "host": "h:1"},
        {"router": "A", "kind": "client", "name": "app", "host": None}]
    addresses = [(a["address"], a["consumers"], a["routers"], a["ingress"], a["egress"])
                 for a in view["addresses"]]
    assert addresses == [("orders", 2, ["C"], 10, 10)]
    # Only client links (not inter-router ones, not the console's own management link).
    assert [(link["router"], link["id"], link["container"]) for link in view["links"]] == [("A", "7", "app")]
    assert [t["title"] for t in details["B"]["tables"]][4] == "Routers in the Network"


def test_rates_come_from_two_polls() -> None:
    _, _, counters = build_snapshot("A", routers(10, 10), None, 100.0)
    view, _, _ = build_snapshot("A", routers(30, 25), counters, 102.0)
    orders = view["addresses"][0]
    # "in" counts each delivery once, where it entered the mesh (A: 20 in 2 s); "out" where
    # it left (C: 15 in 2 s).
    assert orders["ingressRate"] == 10.0 and orders["egressRate"] == 7.5
    assert view["links"][0]["rate"] == 10.0


def test_an_unreachable_router_is_shown_as_such() -> None:
    data = routers(1, 1)
    data["C"] = RouterData("C", error="timed out")
    view, details, _ = build_snapshot("A", data, None, 1.0)
    assert [(r["id"], r["reachable"]) for r in view["routers"]] == [("A", True), ("B", True), ("C", False)]
    assert details["C"]["reachable"] is False and details["C"]["error"] == "timed out"


def test_edges_carry_the_round_trip_either_end_measured() -> None:
    data = routers(1, 1)
    # A measured B (2 ms), B measured A (5 ms) and C (none answered: 3 failures); C measures nothing.
    data["A"].rows["nodes"][0].update(roundTripSeconds=0.002, probeFailures=0)
    data["B"].rows["nodes"][0].update(roundTripSeconds=0.005, probeFailures=0)
    data["B"].rows["nodes"][1].update(roundTripSeconds=None, probeFailures=3)
    view, _, _ = build_snapshot("A", data, None, 1.0)
    edges = {(e["a"], e["b"]): (e["roundTrip"], e["probeFailures"]) for e in view["edges"]}
    # Both ends measured A-B: the slower is shown.
    assert edges == {("A", "B"): (0.005, 0), ("B", "C"): (None, 3)}


def test_routers_report_how_many_auto_links_and_link_routes_are_active() -> None:
    data = routers(1, 1)
    data["A"].rows["autolinks"] = [
        {"address": "queue.orders", "direction": "out", "operStatus": "active"},
        {"address": "queue.refunds", "direction": "in", "operStatus": "failed"}]
    data["A"].rows["linkroutes"] = [{"prefix": "lr.", "direction": "in", "operStatus": "inactive"}]
    data["B"].rows["linkroutes"] = [{"pattern": "b.#", "direction": "out", "operStatus": "active"}]
    view, _, _ = build_snapshot("A", data, None, 1.0)
    by_id = {r["id"]: r for r in view["routers"]}
    assert by_id["A"]["autoLinks"] == {"active": 1, "total": 2}
    assert by_id["A"]["linkRoutes"] == {"active": 0, "total": 1}
    assert by_id["A"]["inactiveRoutes"] == ["auto-link queue.refunds (in): failed",
                                            "link route lr. (in): inactive"]
    assert by_id["B"]["linkRoutes"] == {"active": 1, "total": 1} and by_id["B"]["inactiveRoutes"] == []
    assert by_id["C"]["autoLinks"] == {"active": 0, "total": 0} and by_id["C"]["inactiveRoutes"] == []
