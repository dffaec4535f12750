"""qdrouterd's radius rule on arrival (router_node.c): a message from another router whose
trace is longer than the mesh's radius + 1 is released (settled copies dropped) before it is
routed. Only flooded multicast copies go that far: the rule bounds how many copies a mesh
with loops makes, and a qdmesh router in a mesh with qdrouterd makes no more than
qdrouterd would (protocol/multicast_rules.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.links import DATA, InFlight
from ...core.outcomes import RELEASED

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor


def released_beyond_radius(adaptor: DeliveryAdaptor, message: InFlight) -> bool:
    """True when ``message`` (its annotations read) was given its outcome here by the rule."""
    link = message.in_link
    mesh = adaptor.forwarder.mesh
    if link.kind != DATA or mesh is None or not mesh.beyond_radius(message.trace):
        return False
    if message.settled:
        link.counters.dropped_presettled += 1
    else:
        adaptor.finish_incoming(message, RELEASED)
    # The other router's credit comes back: the message is done with here.
    adaptor.forwarder.return_credit(link)
    return True
