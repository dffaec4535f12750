"""The router itself, its logging, and the management agent."""

from __future__ import annotations

from .builders import BASE_ENTITY, OPERATIONAL_ENTITY, attr, conf, count, entity, one_of, status
from .types import BOOLEAN, INTEGER, PATH, STRING

DISTRIBUTIONS = ("multicast", "closest", "balanced", "unavailable")

LOG_MODULES = (
    "ROUTER", "ROUTER_CORE", "ROUTER_HELLO", "ROUTER_LS", "ROUTER_MA", "MESSAGE", "SERVER", "AGENT",
    "AUTHSERVICE", "CONTAINER", "ERROR", "POLICY", "HTTP", "CONN_MGR", "PYTHON", "PROTOCOL", "DEFAULT",
)

_ROUTER_STATS = (
    count("addrCount", "Addresses the router knows."),
    count("linkCount", "Links attached to the router."),
    count("blockedLinkCount", "Links that have had no credit for more than 10 seconds."),
    count("nodeCount", "Other routers known in the network."),
    count("linkRouteCount", "Configured link routes."),
    count("autoLinkCount", "Configured auto-links."),
    count("connectionCount", "Open connections."),
    count("presettledDeliveries", "Deliveries that arrived already settled."),
    count("droppedPresettledDeliveries", "Pre-settled deliveries the router discarded."),
    count("acceptedDeliveries", "Deliveries that ended ACCEPTED."),
    count("rejectedDeliveries", "Deliveries that ended REJECTED."),
    count("releasedDeliveries", "Deliveries that ended RELEASED."),
    count("modifiedDeliveries", "Deliveries that ended MODIFIED."),
    count("deliveriesDelayed1Sec", "Settled deliveries that spent 1 to 10 seconds in the router."),
    count("deliveriesDelayed10Sec", "Settled deliveries that spent over 10 seconds in the router."),
    count("deliveriesStuck", "Unsettled deliveries held for over 10 seconds right now."),
    count("deliveriesIngress", "Deliveries received from directly attached senders."),
    count("deliveriesEgress", "Deliveries sent to directly attached receivers."),
    count("deliveriesTransit", "Deliveries forwarded to another router."),
    count("deliveriesIngressRouteContainer", "Deliveries received from route-container connections."),
    count("deliveriesEgressRouteContainer", "Deliveries sent to route-container connections."),
    count("deliveriesRedirectedToFallback", "Deliveries sent to a fallback destination."),
    count("uptimeSeconds", "Seconds since the router started."),
    count("memoryUsage", "Memory used by the router process, in bytes."),
    count("outputBlockedCount", "qdmesh: times a connection's output was blocked (its queued output "
                                "passed 1 MiB; the connection entity's outputBlocked)."),
    count("outputBlockedConnectionCount", "qdmesh: connections whose output is blocked now."),
    count("inputHeldConnectionCount", "qdmesh: connections whose socket the router is not reading "
                                      "now, held back for a blocked consumer."),
    count("internalErrorCount", "qdmesh: failures inside the router that it contained and survived: "
                                "each closed one connection with amqp:internal-error, or ended one "
                                "timer run, HTTP request or loop step that named no connection "
                                "(logged at error level with a traceback)."),
)

ROUTER = entity(
    "router",
    [
        conf("id", deprecated=("routerId",),
             doc="The router's identity in the network; no whitespace. Generated when not given."),
        one_of("mode", "standalone", "interior", "edge", default="standalone",
               doc="standalone: route among local clients only; interior: join a router network; "
                   "edge: attach to interior routers as a leaf."),
        status("area", default="0", doc="Reserved; not used."),
        status("version", doc="Router software version."),
        status("hostName", doc="Name of the host the router runs on."),
        conf("helloIntervalSeconds", INTEGER, default=1, deprecated=("helloInterval",),
             doc="Seconds between HELLO messages to neighbouring routers."),
        conf("helloMaxAgeSeconds", INTEGER, default=3, deprecated=("helloMaxAge",),
             doc="A neighbour silent for this many seconds is considered gone."),
        conf("raIntervalSeconds", INTEGER, default=30, deprecated=("raInterval",),
             doc="Seconds between router advertisements while the topology is stable."),
        conf("raIntervalFluxSeconds", INTEGER, default=4, deprecated=("raIntervalFlux",),
             doc="Seconds between router advertisements while the topology is changing."),
        conf("remoteLsMaxAgeSeconds", INTEGER, default=60, deprecated=("remoteLsMaxAge",),
             doc="Link state not refreshed for this many seconds is considered stale."),
        conf("workerThreads", INTEGER, default=4, doc="Number of threads doing message work."),
        conf("debugDumpFile", PATH, deprecated=("debugDump",),
             doc="File to write debug information to when no logger is available."),
        conf("saslConfigDir", PATH, deprecated=("saslConfigPath",),
             doc="Directory holding the SASL configuration file."),
        conf("saslConfigName", default="qdrouterd",
             doc="SASL configuration name; the file read is this name plus '.conf'."),
        conf("allowResumableLinkRoute", BOOLEAN, default=True,
             doc="Allow routing links that ask for a non-zero timeout or a durable terminus."),
        conf("timestampsInUTC", BOOLEAN, doc="Log timestamps in UTC instead of local time."),
        conf("timestampFormat", doc="strftime-style format for log timestamps."),
        conf("allowUnsettledMulticast", BOOLEAN, default=False,
             doc="Deprecated: accept unsettled deliveries to multicast addresses, settling them on "
                 "arrival."),
        one_of("defaultDistribution", *DISTRIBUTIONS, default="balanced",
               doc="Distribution used for addresses that no address section matches."),
        conf("metadata", doc="Free text describing the router, for tools; the router ignores it."),
        conf("canaryIntervalSeconds", INTEGER, default=0, minimum=0,
             doc="qdmesh: seconds between round-trip probes an interior router sends to each "
                 "neighbour's management (router.node roundTripSeconds); 0 sends none."),
        *_ROUTER_STATS,
        status("draining", BOOLEAN, doc="qdmesh: the router is draining (after SIGTERM, with "
                                        "--drain-timeout above 0): it accepts no new connections "
                                        "or links and lets in-flight deliveries settle before it stops."),
    ],
    singleton=True,
    doc="The router: its identity, mode and routing protocol timers. Exactly one is required.",
)

LOG = entity(
    "log",
    [
        one_of("module", *LOG_MODULES, required=True,
               doc="Module whose logging is configured; DEFAULT sets what other modules inherit."),
        attr("enable", STRING, create=True, update=True,
             doc="Comma-separated levels (trace, debug, info, notice, warning, error, critical); "
                 "a trailing '+' means that level and above; 'none' disables."),
        attr("includeTimestamp", BOOLEAN, create=True, update=True, deprecated=("timestamp",),
             doc="Prefix each message with a timestamp."),
        attr("includeSource", BOOLEAN, create=True, update=True, deprecated=("source",),
             doc="Add the source file and line to each message."),
        attr("outputFile", STRING, create=True, update=True, deprecated=("output",),
             doc="stderr, stdout, syslog, or the path of a file to append to."),
    ],
    operations=("UPDATE",),
    doc="Logging settings for one module; may be changed while the router runs.",
)

LOG_STATS = entity(
    "logStats",
    [count(f"{level}Count", f"Messages logged at {level} level.")
     for level in ("trace", "debug", "info", "notice", "warning", "error", "critical")],
    operational=True,
    doc="How many messages a log module has produced at each level.",
)

AMQP_MANAGEMENT = entity(
    "org.amqp.management",
    [],
    operational=True,
    long_name="org.amqp.management",
    operations=("QUERY", "GET-TYPES", "GET-ANNOTATIONS", "GET-OPERATIONS", "GET-ATTRIBUTES",
                "GET-MGMT-NODES"),
    singleton=True,
    doc="The standard AMQP management node.",
)

MANAGEMENT = entity(
    "management",
    [],
    operational=True,
    # Its own operations, then those it inherits from org.amqp.management, as qdrouterd lists them.
    operations=("GET-SCHEMA", "GET-JSON-SCHEMA", "GET-LOG", "PROFILE", *AMQP_MANAGEMENT.operations),
    singleton=True,
    extends=("org.amqp.management", OPERATIONAL_ENTITY, BASE_ENTITY),
    doc="The router's management agent, with its extensions to AMQP management.",
)

TYPES = (ROUTER, LOG, LOG_STATS, AMQP_MANAGEMENT, MANAGEMENT)
