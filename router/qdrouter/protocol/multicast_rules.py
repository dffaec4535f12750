"""Which routers a multicast copy goes on to, and qdrouterd's radius rule.

Two rules, chosen per mesh (docs/routing-protocol.md):

* Trees (every reachable router advertises TREE_SCHEME in its RA): a copy that entered the
  network at origin O goes toward destination D only if this router is on O's tree to D,
  with trees from protocol/multicast_trees.py. Every router with a consumer gets exactly one
  copy.
* Flooding (any other router in the mesh, e.g. qdrouterd): qdrouterd 1.19's own rule
  (router_core/forwarder.c, qdr_forward_multicast_CT): one copy to the next hop of every
  destination, except next hops the copy has already passed (its trace), and copies
  whose trace is longer than the radius + 1 are released on arrival (router_node.c). In a
  mesh with loops a router gets several copies, as many as in an all-qdrouterd mesh of the
  same shape and no more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Dict, FrozenSet, Iterable, Set

#: The tree scheme this router forwards multicast by, advertised in its RA.
TREE_SCHEME = 1


@dataclass(frozen=True)
class MulticastTrees:
    """The tree rule's tables: destination -> next hop on the trees, and destination ->
    origins whose trees reach it through this router."""

    next_hops: Dict[str, str] = field(default_factory=dict)
    valid_origins: Dict[str, FrozenSet[str]] = field(default_factory=dict)


def beyond_radius(trace_length: int, radius: int | None) -> bool:
    """qdrouterd releases a delivery that has passed more routers than the radius + 1 (it can
    only be a flooded copy that others get by a shorter way). ``radius`` None: the tree rule
    is in force and no copy loops, so nothing is dropped."""
    return radius is not None and trace_length > radius + 1


def flood_next_hops(next_hop: Callable[[str], str | None], destinations: Iterable[str], me: str,
                    trace: Collection[str]) -> Set[str]:
    """qdrouterd's rule: the next hop of every destination but me, unless the copy has been
    there (a neighbour in the trace: qdrouterd's link exclusions)."""
    hops: Set[str] = set()
    for dest in destinations:
        if dest == me:
            continue
        hop = next_hop(dest)
        if hop is not None and hop not in trace:
            hops.add(hop)
    return hops


def tree_next_hops(trees: MulticastTrees, destinations: Iterable[str], me: str, origin: str,
                   trace: Collection[str]) -> Set[str]:
    """The tree rule: toward each destination this router is on origin's tree to."""
    hops: Set[str] = set()
    for dest in destinations:
        if dest == me or dest in trace:
            continue
        if origin != me and origin not in trees.valid_origins.get(dest, ()):
            continue
        hop = trees.next_hops.get(dest)
        if hop is not None:
            hops.add(hop)
    return hops
