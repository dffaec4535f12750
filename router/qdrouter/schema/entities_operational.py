"""Run-time state the router reports: links, addresses, other routers, connections, memory."""

from __future__ import annotations

from .builders import attr, count, entity, status
from .types import BOOLEAN, ENTITY_ID, FLOAT, INTEGER, LIST, MAP

_SETTLEMENT_COUNTS = (
    count("deliveriesDelayed1Sec", "Settled deliveries that spent 1 to 10 seconds in the router."),
    count("deliveriesDelayed10Sec", "Settled deliveries that spent over 10 seconds in the router."),
    count("deliveriesStuck", "Unsettled deliveries held for over 10 seconds right now."),
)

ROUTER_LINK = entity(
    "router.link",
    [
        attr("adminStatus", "enum", choices=("enabled", "disabled"), default="enabled", update=True,
             doc="Set to disabled to stop the link."),
        status("operStatus", choices=("up", "down", "quiescing", "idle"), doc="State of the link."),
        status("linkName", doc="Link name from the attach."),
        status("linkType", choices=("endpoint", "router-control", "inter-router"),
               doc="endpoint: to a client or container; router-control and inter-router: to "
                   "another router."),
        status("linkDir", choices=("in", "out"), doc="Whether deliveries flow in or out."),
        status("owningAddr", doc="Address of the link: the target of incoming links, the source "
                                 "of outgoing ones."),
        status("capacity", INTEGER, doc="Most undelivered plus unsettled deliveries allowed."),
        status("peer", doc="Identity of the paired link, for link-routed links."),
        status("connectionId", INTEGER, doc="Identity of the connection the link belongs to."),
        count("undeliveredCount", "Deliveries waiting to be sent."),
        count("unsettledCount", "Deliveries sent but not settled."),
        count("deliveryCount", "Deliveries that crossed the link."),
        count("presettledCount", "Deliveries that were pre-settled."),
        count("droppedPresettledCount", "Pre-settled deliveries dropped."),
        count("acceptedCount", "Deliveries accepted."),
        count("rejectedCount", "Deliveries rejected."),
        count("releasedCount", "Deliveries released."),
        count("modifiedCount", "Deliveries modified."),
        *_SETTLEMENT_COUNTS,
        count("creditAvailable", "Credit available now."),
        count("zeroCreditSeconds", "Seconds the link has had no credit."),
        count("settleRate", "Settlements per second, averaged over five seconds (outgoing links)."),
        status("ingressHistogram", LIST,
               doc="Outgoing links of normal connections: settled deliveries by ingress router."),
        status("priority", INTEGER, doc="Inter-router links: the message priority carried."),
    ],
    operational=True,
    operations=("UPDATE",),
    doc="A link attached to the router.",
)

ROUTER_ADDRESS = entity(
    "router.address",
    [
        status("distribution",
               choices=("flood", "multicast", "closest", "balanced", "linkBalanced", "unavailable"),
               doc="How deliveries to the address are forwarded."),
        count("inProcess", "Subscribers inside the router process."),
        count("subscriberCount", "Local subscribers."),
        count("remoteCount", "Other routers with at least one subscriber."),
        count("containerCount", "Attached containers serving this link-route address."),
        count("deliveriesIngress", "Deliveries that entered the network here."),
        count("deliveriesEgress", "Deliveries that left the network here."),
        count("deliveriesTransit", "Deliveries forwarded through this router to another."),
        count("deliveriesToContainer", "Deliveries given to an in-process subscriber."),
        count("deliveriesFromContainer", "Deliveries sent by an in-process sender."),
        count("deliveriesIngressRouteContainer", "Deliveries received from a route container."),
        count("deliveriesEgressRouteContainer", "Deliveries sent to a route container."),
        count("deliveriesRedirectedToFallback", "Deliveries sent to the fallback destination."),
        status("key", doc="The router's internal key for the address (class prefix and phase "
                          "included)."),
        status("remoteHostRouters", LIST, doc="Routers with a destination for the address."),
        status("transitOutstanding", LIST,
               doc="Outstanding deliveries on each inter-router link (balanced addresses)."),
        count("trackedDeliveries", "Transit deliveries tracked for balancing."),
        status("priority", INTEGER, doc="The message priority handled by this address."),
    ],
    operational=True,
    doc="An address the router knows.",
)

ROUTER_NODE = entity(
    "router.node",
    [
        status("id", doc="The other router's id."),
        status("protocolVersion", INTEGER, doc="Routing protocol version it speaks."),
        status("instance", INTEGER, doc="Its boot instance number."),
        status("linkState", LIST, doc="Its neighbours."),
        status("nextHop", doc="Neighbour through which it is reached."),
        status("validOrigins", LIST,
               doc="Origins whose messages may arrive through it (used to drop duplicates)."),
        status("address", doc="Its address."),
        status("routerLink", ENTITY_ID, doc="Local link to it, when it is a neighbour."),
        status("cost", INTEGER, doc="Cost of reaching it."),
        status("lastTopoChange", INTEGER, doc="When its neighbourhood last changed."),
        status("index", INTEGER, doc="Its index in this router's statistics."),
        # qdmesh's own (docs/management.md, "Neighbour round trips"): neighbours only, and only
        # with the router's canaryIntervalSeconds above 0.
        status("roundTripSeconds", FLOAT,
               doc="qdmesh: the last round trip of a management request to this neighbour."),
        status("roundTripAverageSeconds", FLOAT,
               doc="qdmesh: the moving average (EWMA) of the round trips to this neighbour."),
        count("probeFailures", "qdmesh: round-trip probes to this neighbour in a row that got no "
                               "answer in time."),
    ],
    operational=True,
    doc="Another router in the network.",
)

CONNECTION = entity(
    "connection",
    [
        attr("adminStatus", "enum", choices=("enabled", "deleted"), default="enabled", update=True,
             doc="Set to deleted to close the connection."),
        status("operStatus", choices=("up", "closing"), doc="State of the connection."),
        status("protocol", doc="Protocol spoken (amqp)."),
        status("container", doc="Container id of the peer."),
        status("opened", BOOLEAN, doc="The AMQP open has been exchanged."),
        status("host", doc="Peer address as host:port."),
        status("dir", choices=("in", "out"), doc="in: accepted by a listener; out: made by a "
                                                 "connector."),
        status("role", doc="Role of the connection (normal, inter-router, ...)."),
        status("isAuthenticated", BOOLEAN, doc="The peer's identity was authenticated."),
        status("isEncrypted", BOOLEAN, doc="The connection is encrypted."),
        attr("enableProtocolTrace", BOOLEAN, default=False, update=True,
             doc="Log every frame on this connection."),
        status("sasl", doc="SASL mechanism used."),
        status("user", doc="Authenticated user."),
        status("ssl", BOOLEAN, doc="TLS is in use."),
        status("sslProto", doc="TLS protocol version."),
        status("sslCipher", doc="TLS cipher."),
        status("sslSsf", INTEGER, doc="TLS security strength factor."),
        status("sslProfileOrdinal", INTEGER,
               doc="qdmesh: the ordinal of the sslProfile the connection's TLS was made with; "
                   "none for plain connections."),
        status("tenant", doc="Tenant namespace, on multi-tenant listeners."),
        count("uptimeSeconds", "Seconds since the connection was made."),
        status("properties", MAP, doc="Connection properties the peer sent."),
        count("lastDlvSeconds", "Seconds since the last delivery on the connection."),
        # qdmesh's own (docs/management.md, "Blocked connections"): qdrouterd shows no hold-off.
        status("outputBlocked", BOOLEAN,
               doc="qdmesh: the connection's queued output passed its bound (1 MiB): its "
                   "consumers get nothing more until its socket has taken half of it."),
        count("outputQueuedBytes", "qdmesh: bytes handed to the connection's socket and not yet "
                                   "written to it."),
        count("outputBlockedCount", "qdmesh: times the connection's output was blocked."),
        status("inputHeld", BOOLEAN,
               doc="qdmesh: the router is not reading the connection's socket: a large message it "
                   "sends is streamed to a consumer whose output is blocked (the hold-off)."),
        count("inputHeldCount", "qdmesh: times the router stopped reading the connection's socket "
                                "for a blocked consumer."),
    ],
    operational=True,
    doc="A connection to the router.",
)

ALLOCATOR = entity(
    "allocator",
    [
        status("typeName", doc="Kind of object pooled."),
        status("typeSize", INTEGER, doc="Size of one object, in bytes."),
        status("transferBatchSize", INTEGER, doc="Objects moved between pools at a time."),
        count("localFreeListMax", "Largest per-thread free list."),
        count("globalFreeListMax", "Largest global free list."),
        count("totalAllocFromHeap", "Objects allocated from the heap."),
        count("totalFreeToHeap", "Objects returned to the heap."),
        count("heldByThreads", "Objects held in per-thread pools."),
        count("batchesRebalancedToThreads", "Batches moved to per-thread pools."),
        count("batchesRebalancedToGlobal", "Batches moved to the global pool."),
    ],
    operational=True,
    doc="A memory pool (kept for tools that query it; may report nothing).",
)

TYPES = (ROUTER_LINK, ROUTER_ADDRESS, ROUTER_NODE, CONNECTION, ALLOCATOR)
