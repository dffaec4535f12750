"""How addresses are routed: address treatments, link routes, auto-links and exchanges."""

from __future__ import annotations

from .builders import conf, count, entity, one_of, status
from .entities_router import DISTRIBUTIONS
from .types import BOOLEAN, INTEGER

DIRECTIONS = ("in", "out")

_PATTERN_DOC = ("Address pattern: tokens separated by '/' (or '.'), where '*' matches exactly one "
                "token and '#' zero or more.  Give either prefix or pattern.")

ADDRESS = entity(
    "router.config.address",
    [
        conf("prefix", doc="Addresses starting with this prefix get these settings.  Give either "
                           "prefix or pattern."),
        conf("pattern", doc=_PATTERN_DOC),
        one_of("distribution", *DISTRIBUTIONS, default="balanced",
               doc="multicast: a copy to every consumer; closest: one consumer, by shortest path; "
                   "balanced: one consumer, spreading load; unavailable: refuse the address."),
        conf("waypoint", BOOLEAN, default=False,
             doc="The address passes through a waypoint such as a broker queue, so it is routed "
                 "in two phases."),
        conf("ingressPhase", INTEGER, minimum=0, maximum=9,
             doc="Advanced: phase given to messages entering the network."),
        conf("egressPhase", INTEGER, minimum=0, maximum=9,
             doc="Advanced: phase used to deliver messages to consumers."),
        conf("priority", INTEGER, minimum=0, maximum=9,
             doc="Priority (0 to 9) given to messages sent to the address that do not carry one."),
        conf("enableFallback", BOOLEAN, default=False,
             doc="Send messages with no reachable consumer to the address's fallback destination "
                 "instead of releasing them."),
    ],
    operations=("CREATE", "DELETE"),
    doc="How messages to a set of addresses are distributed.",
)

LINK_ROUTE = entity(
    "router.config.linkRoute",
    [
        conf("prefix", doc="Link addresses starting with this prefix are routed.  Give either prefix "
                           "or pattern."),
        conf("pattern", doc=_PATTERN_DOC),
        conf("addExternalPrefix",
             doc="Prefix added to the address when the link is attached to the container."),
        conf("delExternalPrefix",
             doc="Prefix removed from the address when the link is attached to the container."),
        conf("containerId", doc="Container id of the destination.  Give containerId or connection, "
                                "not both."),
        conf("connection", doc="Name of the listener or connector whose connection leads to the "
                               "destination."),
        one_of("distribution", "linkBalanced", default="linkBalanced",
               doc="Only linkBalanced: each attach goes to one of the available destinations."),
        one_of("direction", *DIRECTIONS, required=True, deprecated=("dir",),
               doc="in: links from client senders; out: links to client receivers."),
        status("operStatus", choices=("inactive", "active"),
               doc="active once a destination container is connected."),
    ],
    operations=("CREATE", "DELETE"),
    doc="Routes link attaches for a set of addresses to a container such as a broker.",
)

AUTO_LINK = entity(
    "router.config.autoLink",
    [
        conf("address", required=True, deprecated=("addr",),
             doc="Address of the node (e.g. the queue) on the remote container."),
        one_of("direction", *DIRECTIONS, required=True, deprecated=("dir",),
               doc="in: messages flow from the container into the router; out: from the router "
                   "to the container."),
        conf("phase", INTEGER, minimum=0, maximum=9,
             doc="Address phase of the link; 0 for 'out' and 1 for 'in' if unset."),
        conf("containerId", doc="Container id to attach to.  Give containerId or connection, not "
                                "both."),
        conf("connection", doc="Name of the listener or connector whose connection to attach on."),
        conf("externalAddress", deprecated=("externalAddr",),
             doc="Address the node has on the remote container, when different from 'address'."),
        conf("fallback", BOOLEAN, default=False,
             doc="Attach as the fallback destination of the address."),
        status("linkRef", doc="Identity of the router.link while the link exists."),
        status("operStatus", choices=("inactive", "attaching", "failed", "active", "quiescing",
                                      "idle"),
               doc="State of the link."),
        status("lastError", doc="Why the last attach failed."),
    ],
    operations=("CREATE", "DELETE"),
    doc="A link the router itself attaches, and keeps attached, to a node on a container.",
)

EXCHANGE = entity(
    "router.config.exchange",
    [
        conf("address", required=True, doc="Address publishers send to."),
        conf("phase", INTEGER, minimum=0, maximum=9, doc="Address phase of the exchange; 0 if unset."),
        conf("alternateAddress", doc="Where messages matching no binding go."),
        conf("alternatePhase", INTEGER, minimum=0, maximum=9, doc="Phase of alternateAddress; 0 if unset."),
        one_of("matchMethod", "amqp", "mqtt", default="amqp",
               doc="How binding keys match subjects: AMQP 0-10 topic or MQTT topic filter rules."),
        count("bindingCount", "Bindings of this exchange."),
        count("receivedCount", "Deliveries received."),
        count("droppedCount", "Deliveries dropped for want of a matching binding."),
        count("forwardedCount", "Deliveries forwarded by bindings or to the alternate address."),
        count("divertedCount", "Deliveries forwarded to the alternate address only."),
    ],
    operations=("CREATE", "DELETE"),
    doc="Experimental: a topic exchange forwarding by message subject.",
)

BINDING = entity(
    "router.config.binding",
    [
        conf("exchangeName", required=True, doc="Name of the exchange this binding belongs to."),
        conf("bindingKey", doc="Key matched against each message's subject."),
        conf("nextHopAddress", required=True, doc="Address matching messages are forwarded to."),
        conf("nextHopPhase", INTEGER, minimum=0, maximum=9, doc="Phase used for nextHopAddress."),
        count("matchedCount", "Deliveries that matched."),
    ],
    operations=("CREATE", "DELETE"),
    doc="Experimental: forwards an exchange's messages whose subject matches a key.",
)

CONNECTION_LINK_ROUTE = entity(
    "router.connection.linkRoute",
    [
        conf("pattern", required=True, doc=_PATTERN_DOC),
        one_of("direction", *DIRECTIONS, required=True,
               doc="in: links from client senders; out: links to client receivers."),
        status("containerId", doc="Container that created the link route."),
    ],
    operations=("CREATE", "DELETE"),
    config_section=None,  # exists only for the life of the connection that creates it
    doc="Experimental: a link route created by, and lasting as long as, a connection.",
)

TYPES = (ADDRESS, LINK_ROUTE, AUTO_LINK, EXCHANGE, BINDING, CONNECTION_LINK_ROUTE)
