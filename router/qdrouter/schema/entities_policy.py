"""Connection policy: the global limits, vhosts and their user groups."""

from __future__ import annotations

from .builders import attr, conf, count, entity, status
from .types import BOOLEAN, INTEGER, MAP, PATH, STRING

_UNLIMITED = 65535
_MAX_INT32 = 2147483647

POLICY = entity(
    "policy",
    [
        conf("maxConnections", INTEGER, default=_UNLIMITED,
             doc="Most incoming client connections at once; always enforced."),
        conf("maxMessageSize", INTEGER, default=0,
             doc="Largest message, in bytes, accepted into the network; 0 for no limit."),
        conf("enableVhostPolicy", BOOLEAN, default=False,
             doc="Enforce the vhost policies (connection denials and resource limits)."),
        conf("enableVhostNamePatterns", BOOLEAN, default=False,
             doc="Treat vhost hostnames as patterns rather than literal names."),
        conf("policyDir", PATH, default="",
             doc="Directory whose *.json files hold more vhost definitions."),
        conf("defaultVhost", default="$default",
             doc="Vhost applied to connections whose vhost has no policy; empty disables."),
        count("connectionsProcessed", "Connections checked against policy."),
        count("connectionsDenied", "Connections refused by policy."),
        count("connectionsCurrent", "Connections currently open under policy."),
        count("linksDenied", "Sender and receiver links refused by vhost policy."),
        count("maxMessageSizeDenied", "Messages refused for being too large."),
        count("totalDenials", "Connections, links and messages refused."),
    ],
    singleton=True,
    doc="Global connection limits and the switch for vhost policy.",
)


VHOST = entity(
    "vhost",
    [
        attr("hostname", STRING, required=True, create=True, deprecated=("id",),
             doc="Vhost the policy applies to (the hostname in the client's open).  When absent "
                 "in a config file, the section's name is used."),
        attr("aliases", STRING, create=True, update=True,
             doc="Comma-separated other hostnames sharing this policy."),
        attr("maxConnections", INTEGER, default=_UNLIMITED, create=True, update=True,
             doc="Most connections to this vhost at once."),
        attr("maxMessageSize", INTEGER, create=True, update=True,
             doc="Largest message, in bytes; overrides the policy's limit."),
        attr("maxConnectionsPerUser", INTEGER, default=_UNLIMITED, create=True, update=True,
             doc="Most connections any one user may have at once."),
        attr("maxConnectionsPerHost", INTEGER, default=_UNLIMITED, create=True, update=True,
             deprecated=("maxConnectionsPerRemoteHost",),
             doc="Most connections from any one remote host at once."),
        attr("allowUnknownUser", BOOLEAN, default=False, create=True, update=True,
             doc="Let users who are in no group connect, with the '$default' group's settings."),
        attr("groups", MAP, create=True, update=True,
             doc="User groups: a map from group name to vhostUserGroupSettings."),
    ],
    operations=("CREATE", "UPDATE", "DELETE"),
    doc="Policy for connections to one virtual host: users, groups and limits.",
)

_GROUP_SETTINGS = (
    ("users", STRING, None, "Comma-separated users in the group; a user may be in one group only."),
    ("remoteHosts", STRING, None,
     "Comma-separated hosts, addresses or address ranges members may connect from; '*' for any."),
    ("maxConnectionsPerUser", INTEGER, None, "Overrides the vhost's maxConnectionsPerUser."),
    ("maxConnectionsPerHost", INTEGER, None, "Overrides the vhost's maxConnectionsPerHost."),
    ("maxMessageSize", INTEGER, None, "Largest message, in bytes; 0 for no limit."),
    ("maxFrameSize", INTEGER, None, "Largest frame offered in the open; overrides the listener's."),
    ("maxSessionWindow", INTEGER, None,
     "Incoming window of new sessions, in frames (buffer: maxFrameSize * maxSessionWindow)."),
    ("maxSessions", INTEGER, None, "Most sessions per connection."),
    ("maxSenders", INTEGER, _MAX_INT32, "Most sending links per connection; 0 forbids senders."),
    ("maxReceivers", INTEGER, _MAX_INT32, "Most receiving links per connection; 0 forbids them."),
    ("allowDynamicSource", BOOLEAN, False, "May create receivers with a dynamic source."),
    ("allowAnonymousSender", BOOLEAN, False, "May create senders with no target address."),
    ("allowUserIdProxy", BOOLEAN, False, "May send messages whose user-id is not their own."),
    ("allowWaypointLinks", BOOLEAN, True, "May claim the waypoint capability on links."),
    ("allowDynamicLinkRoutes", BOOLEAN, True, "May create connection-scoped link routes."),
    ("allowAdminStatusUpdate", BOOLEAN, True, "May change the adminStatus of other connections."),
    ("allowFallbackLinks", BOOLEAN, True, "May attach links as fallback destinations."),
    ("sources", STRING, None,
     "Comma-separated source addresses members may receive from; '*' matches a trailing part and "
     "'{user}' stands for the user's name."),
    ("targets", STRING, None, "Like sources, for the target addresses members may send to."),
    ("sourcePattern", STRING, None, "Address pattern of allowed sources; instead of sources."),
    ("targetPattern", STRING, None, "Address pattern of allowed targets; instead of targets."),
)

VHOST_USER_GROUP_SETTINGS = entity(
    "vhostUserGroupSettings",
    [attr(name, type_, default=default, required=name in ("users", "remoteHosts"), create=True,
          update=True, doc=doc)
     for name, type_, default, doc in _GROUP_SETTINGS],
    config_section=None,  # only ever found inside a vhost's groups map
    doc="Settings for one user group of a vhost.",
)

VHOST_STATS = entity(
    "vhostStats",
    [
        status("id", doc="Deprecated: the same as hostname."),
        status("hostname", doc="The vhost."),
        count("connectionsApproved", "Connections allowed."),
        count("connectionsDenied", "Connections refused."),
        count("connectionsCurrent", "Connections open now."),
        status("perUserState", MAP, doc="For each user, their connections."),
        status("perHostState", MAP, doc="For each remote host, its connections."),
        count("sessionDenied", "Sessions refused."),
        count("senderDenied", "Sender links refused."),
        count("receiverDenied", "Receiver links refused."),
        count("maxMessageSizeDenied", "Messages refused for being too large."),
        count("userIdDenied", "Messages refused for a user-id other than the sender's own."),
        count("targetDenied", "Messages on anonymous links refused for an address outside the "
                              "user's targets."),
    ],
    operational=True,
    doc="Connection and denial statistics of one vhost.",
)

TYPES = (POLICY, VHOST, VHOST_USER_GROUP_SETTINGS, VHOST_STATS)
