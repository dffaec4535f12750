"""Which multicast rule a router follows and what each gives: qdmesh's trees (one copy per
router) while every router advertises them, qdrouterd's flooding with its radius rule (as
many copies as an all-qdrouterd mesh of the same shape) as soon as one does not; and
balanced anycast's valid-origin check."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from qdrouter.core.mesh_routes import MeshRoutes
from qdrouter.protocol import multicast_trees
from qdrouter.protocol.engine import RoutingEngine
from qdrouter.protocol.messages import Hello, LinkState, LinkStateUpdate, RouterAdvertisement
from qdrouter.protocol.multicast_rules import (
    TREE_SCHEME,
    MulticastTrees,
    beyond_radius,
    flood_next_hops,
    tree_next_hops,
)
from qdrouter.protocol.paths import compute_paths

LS = Dict[str, Dict[str, int]]


def links(*edges: Tuple[str, str]) -> LS:
    ls: LS = {}
    for a, b in edges:
        ls.setdefault(a, {})[b] = 1
        ls.setdefault(b, {})[a] = 1
    return ls


RING4 = links(("Q1", "C2"), ("C2", "Q3"), ("Q3", "C4"), ("C4", "Q1"))
NAMES = ["Q1", "C2", "Q3", "C4"]
FULL4 = links(*[(a, b) for i, a in enumerate(NAMES) for b in NAMES[i + 1:]])


def view(my_id: str, ls: LS) -> LS:
    return {my_id: ls[my_id], **{k: v for k, v in ls.items() if k != my_id}}


def flood(ls: LS, origin: str) -> Dict[str, int]:
    """qdrouterd's multicast, consumers on every router: copies each router takes in."""
    paths = {r: compute_paths(r, view(r, ls)) for r in ls}
    received = {r: 0 for r in ls}
    queue: List[Tuple[str, List[str]]] = []

    def send(here: str, trace: List[str]) -> None:
        routes = paths[here].routes
        hops = flood_next_hops(lambda d: routes[d].next_hop if d in routes else None, ls, here, trace)
        queue.extend((hop, [*trace, here]) for hop in hops)

    send(origin, [])
    while queue:
        here, trace = queue.pop()
        if beyond_radius(len(trace), paths[here].radius):
            continue
        received[here] += 1
        send(here, trace)
    return received


def trees(ls: LS, origin: str) -> Dict[str, int]:
    graph = multicast_trees.build_graph(ls)
    tables = {}
    for r in ls:
        routes = multicast_trees.compute_routes(r, graph)
        tables[r] = MulticastTrees({d: x.next_hop for d, x in routes.items()},
                                   multicast_trees.compute_valid_origins(r, graph, routes))
    received = {r: 0 for r in ls}
    queue: List[Tuple[str, List[str]]] = [(origin, [])]
    while queue:
        here, trace = queue.pop()
        if here != origin:
            received[here] += 1
        for hop in tree_next_hops(tables[here], ls, here, origin, trace):
            queue.append((hop, [*trace, here]))
    return received


def test_flooding_gives_as_many_copies_as_qdrouterd() -> None:
    """Ring of four: twice each; full mesh of four: three times each (the direct copy and one
    by each other router; the copies that went three hops are beyond radius 1 + 1)."""
    for ls, copies in ((RING4, 2), (FULL4, 3)):
        for origin in ls:
            counts = flood(ls, origin)
            assert counts.pop(origin) == 0  # never back to a router on the trace
            assert set(counts.values()) == {copies}, (origin, counts)


def test_trees_give_one_copy() -> None:
    for ls in (RING4, FULL4):
        for origin in ls:
            counts = trees(ls, origin)
            assert counts.pop(origin) == 0
            assert set(counts.values()) == {1}, (origin, counts)


def test_beyond_radius_is_qdrouterds_rule() -> None:
    assert not beyond_radius(3, 2) and beyond_radius(4, 2)
    assert not beyond_radius(100, None)  # trees: no copy loops, nothing dropped


def _engine(my_id: str, ls: LS) -> RoutingEngine:
    engine = RoutingEngine(my_id, instance=1)
    for peer, cost in ls[my_id].items():
        engine.neighbor_link_up(peer, cost)
        engine.on_message("HELLO", Hello(peer, seen=[my_id], instance=1).to_dict(), peer, 0.0)
    engine.tick(0.0)
    for rid, peers in ls.items():
        if rid != my_id:
            body = LinkStateUpdate(rid, 1, LinkState(rid, 1, peers), instance=1).to_dict()
            engine.on_message("LSU", body, next(iter(ls[my_id])), 0.1)
    return engine


def _ra(rid: str, scheme: int) -> Dict[str, Any]:
    return RouterAdvertisement(rid, ls_seq=1, mobile_seq=0, instance=1, multicast_scheme=scheme).to_dict()


def test_trees_only_while_every_router_advertises_them() -> None:
    engine = _engine("Q1", RING4)
    assert engine.multicast_trees() is None  # nobody advertised the scheme yet
    for rid in ("C2", "Q3", "C4"):
        engine.on_message("RA", _ra(rid, TREE_SCHEME), "C2", 0.2)
    assert engine.multicast_trees() is not None
    assert engine.routing_table()["Q3"] == ("C2", 2)  # unicast/anycast: qdrouterd's tie-break
    engine.on_message("RA", _ra("C4", 0), "C4", 0.3)  # a qdrouterd (no key) took C4's id
    assert engine.multicast_trees() is None
    assert engine.radius == 2


def test_link_state_updates_name_the_scheme_too() -> None:
    """A router whose link state is known is known as qdmesh or not, even before its RA."""
    engine = _engine("Q1", RING4)
    for rid in ("C2", "Q3", "C4"):
        body = LinkStateUpdate(rid, 2, LinkState(rid, 2, RING4[rid]), instance=1,
                               multicast_scheme=TREE_SCHEME).to_dict()
        engine.on_message("LSU", body, "C2", 0.2)
    assert engine.multicast_trees() is not None
    answer = engine.on_message("LSR", {"id": "Q3", "pv": 1, "area": "0"}, "C2", 5.1)
    own = [o for o in answer if o.opcode == "LSU"]
    assert own and all(o.body["qdmesh_multicast"] == TREE_SCHEME for o in own)


def test_own_advertisement_names_the_scheme() -> None:
    engine = _engine("Q1", RING4)
    ras = [o for o in engine.tick(5.0) if o.opcode == "RA"]
    assert ras and ras[0].body["qdmesh_multicast"] == TREE_SCHEME
    assert RouterAdvertisement.from_dict({"id": "C2", "ls_seq": 1, "mobile_seq": 0}).multicast_scheme == 0


def test_balanced_goes_only_where_qdrouterd_would_take_it() -> None:
    """C4 in the ring Q1-C2-Q3-C4: a balanced message from Q1 for Q3 may not go through it
    (Q1's path to Q3 runs through C2), one from C4's own producers may. Among qdmesh routers
    only (multicast trees in force) no router refuses, so nothing is checked."""
    paths = compute_paths("C4", view("C4", RING4))
    mesh = MeshRoutes("C4")
    mesh.update({d: (r.next_hop, r.cost) for d, r in paths.routes.items()},
                {d: set(o) for d, o in paths.valid_origins.items()})
    link = object()
    mesh.data_links = {"Q3": link, "Q1": object()}  # type: ignore[dict-item]
    assert mesh.link_avoiding("Q3", ["Q1"], None) is link  # closest: no such check
    assert mesh.link_avoiding("Q3", None, "Q1") is None
    assert mesh.link_avoiding("Q3", None, "C4") is link
    assert mesh.link_avoiding("Q3", None, "unknown-router") is link  # as qdrouterd: origin unknown
    mesh.trees = MulticastTrees()  # an all-qdmesh mesh: every next hop passes it on
    assert mesh.link_avoiding("Q3", None, "Q1") is link
