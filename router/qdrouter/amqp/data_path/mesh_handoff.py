"""A message from another router, for an address with one obvious next step, goes straight
to it (hot path): the last hop (one local consumer with credit) or a transit hop (no local
consumer, one router beyond, and the link toward it has credit).

Every message crossing a mesh leaves it through a last hop, and a transit hop at each
router between. Once the message's router annotations are read (amqp/data_path/inbound.py), the
forwarder's walk for it (route, forward, pick, send, transmit, return credit) comes down to
a few checks and the core's send steps (core/sends.py), done here in one function. Any
other case (no route, several consumers or routers, multicast, an in-process address,
messages already waiting, a router the message has passed) returns False and the
forwarder decides, so its decisions stay the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ...core.address_table import CLOSEST, MULTICAST, UNAVAILABLE
from ...core.links import InFlight
from .inbound import annotated, stripped

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor


def mesh_handoff(adaptor: DeliveryAdaptor) -> Callable[[InFlight, str], bool]:
    """``handoff(message, key)`` for a message that arrived on an inter-router link, its
    annotations read: True when it was queued for this router's one consumer of ``key``,
    or for the one router beyond that has ``key``'s consumers."""
    table_find = adaptor.table.find
    pending_append = adaptor.pending_sends.append
    forwarder = adaptor.forwarder
    passed_on = forwarder.passed_on
    node = adaptor.node
    closest = CLOSEST
    multicast = MULTICAST
    unavailable = UNAVAILABLE

    def handoff(message: InFlight, key: str) -> bool:
        address = table_find(key)
        if address is None or address.handler is not None or address.undelivered:
            return False
        distribution = address.distribution
        if distribution is multicast or distribution is unavailable:
            return False
        consumers = address.consumers
        if consumers:
            if len(consumers) != 1:
                return False
            out = consumers[0]
            if out.credit <= 0:
                return False
            if address.remote and distribution is not closest and out.outstanding > 0:
                return False  # balanced may prefer another router: the forwarder weighs it
        else:
            remote = address.remote
            mesh = forwarder.mesh
            if len(remote) != 1 or mesh is None:
                return False
            origin = None if distribution is closest else message.ingress  # balanced: as _pick
            out = mesh.link_avoiding(remote[0], message.trace, origin)  # type: ignore[assignment]
            if out is None or out.credit <= 0:
                return False
        message.key = key
        payload = stripped(message) if out.strip_out else annotated(message, out, node)
        # Counted as egress toward a consumer here, as transit toward another router. The
        # other router's credit comes back (the caller writes it out when half is owed):
        # its message has left this router. Even unsettled: as in qdrouterd, credit on
        # inter-router links is not tied to settlement (many addresses share the link; each
        # producer is bounded at its own router), and passed_on's rule holds no credit for
        # a message from another router.
        tracked = None if message.settled else message
        pending_append((out, payload, tracked))
        passed_on(out, message.in_link, tracked, address)
        return True

    return handoff
