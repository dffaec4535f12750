"""Where a message can go next: the link an anycast address's message takes (closest or
balanced, local consumers and routers beyond), and the link toward the router a topological
address names. Pure choices over the address table and the mesh's routes: the Forwarder
(core/forwarder.py) acts on them."""

from __future__ import annotations

from .address_table import BALANCED, CLOSEST, Address
from .links import CoreLink, InFlight
from .mesh_routes import MeshRoutes, topological_router


def pick(address: Address, message: InFlight, mesh: MeshRoutes | None) -> CoreLink | None:
    """closest: a local consumer with credit (taking turns), else the nearest router;
    balanced: the least loaded of local consumers and remote routers (a router's load
    is its link's outstanding deliveries plus the path cost)."""
    best: CoreLink | None = None
    least = -1
    consumers = address.consumers
    count = usable = len(consumers)
    if count:
        start = address.next_index % count
        closest = address.distribution is CLOSEST
        in_link = message.in_link
        echo = in_link.connection if in_link.via_edge else _UNSET
        for offset in range(count):
            candidate = consumers[(start + offset) % count]
            if candidate.connection is echo:
                usable -= 1  # the edge it came from: as if it were not a consumer
                continue
            if candidate.credit > 0 and (least < 0 or candidate.outstanding < least):
                best = candidate
                least = candidate.outstanding
                if closest or least == 0:
                    break
        if best is not None:
            address.next_index = start + 1
    if address.remote and mesh is not None and (
            (best is None and not usable) or (address.distribution is BALANCED and least > 0)):
        trace = message.trace
        # Balanced: only routers we are on the way to from the message's ingress, as
        # qdrouterd, whose next router would release it otherwise.
        origin = message.ingress if address.distribution is BALANCED else None
        for router in address.remote:
            link = mesh.link_avoiding(router, trace, origin)
            if link is None or link.credit <= 0:
                continue  # the next router grants credit as it passes messages on
            score = mesh.cost(router) + (link.outstanding if address.distribution is BALANCED else 0)
            if least < 0 or score < least:
                best, least = link, score
    return best


def topological_link(mesh: MeshRoutes | None, key: str | None, message: InFlight | None) -> CoreLink | None:
    """The data link toward the router a `_topo/0/<router>/...` address names, if that
    router is another one the mesh can reach (and the message has not been there)."""
    if mesh is None or not key:
        return None
    router = topological_router(key)
    if router is None or router == mesh.my_id:
        return None
    if message is not None and message.trace and router in message.trace:
        return None
    return mesh.link_toward(router)


_UNSET = object()
