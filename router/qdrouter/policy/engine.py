"""The policy decisions (book 2.6): may this connection open, this session begin, this link
attach, this message pass. Pure: callers pass names and counts and apply the answers."""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

from .errors import PolicyError
from .rules import Resolver, resolve, resolve_host_names
from .settings import MAX_INT32, UNLIMITED, GroupSettings, VhostSettings
from .stats import GlobalStats, VhostStats

UNAUTHORIZED = "amqp:unauthorized-access"
LIMIT = "amqp:resource-limit-exceeded"
MESSAGE_SIZE = "amqp:link:message-size-exceeded"
# qdrouterd's words for a message on an anonymous link whose address the user may not send
# to (router_node.c AMQP_rx_handler): clients and tools match on them.
TARGET_VIOLATION = "policy violation on target"
# qdrouterd's descriptions of its refusals (policy.c, router_node.c). qdmesh's begin with them
# and go on to name the rule: a client that matches qdrouterd's words matches these too.
CONNECTION_DISALLOWED = "connection disallowed by local policy"
SESSION_DISALLOWED = "session disallowed by local policy"
LINK_DISALLOWED = "link disallowed by local policy"
USER_ID_VIOLATION = "user_id proxy violation"
OVERSIZE = "Message size exceeded"
WAYPOINT_CAPABILITY = "qd.waypoint"
# The group of a connector's policyVhost that polices its connections (policy.c).
CONNECTOR_GROUP = "$connector"
FALLBACK_CAPABILITY = "qd.fallback"


class Denial:
    """Why something was refused: an AMQP condition and a description naming the rule."""

    __slots__ = ("condition", "description")

    def __init__(self, condition: str, description: str) -> None:
        self.condition = condition
        self.description = description

    def __repr__(self) -> str:
        return f"Denial({self.condition!r}, {self.description!r})"


class ConnectionGrant:
    """An admitted connection's policy for its lifetime. ``group`` is None when vhost policy
    is off: then only the global limits apply."""

    __slots__ = ("group", "host", "max_message_size", "outgoing", "stats", "user", "vhost")

    def __init__(self, vhost: str, user: str, host: str, group: GroupSettings | None,
                 stats: VhostStats | None, max_message_size: int, outgoing: bool = False) -> None:
        self.vhost = vhost
        self.user = user
        self.host = host
        self.group = group
        self.stats = stats
        self.max_message_size = max_message_size
        # A connector's connection (its policyVhost's '$connector' group): its denials are
        # counted in the vhost, but it is not one of the vhost's connections.
        self.outgoing = outgoing

    @property
    def check_user_id(self) -> bool:
        return self.group is not None and not self.group.allow_user_id_proxy

    @property
    def polices_messages(self) -> bool:
        """Whether each message needs a look (size, user-id, or reading partial messages under a
        small session window): the data path asks once per link."""
        group = self.group
        return self.max_message_size > 0 or self.check_user_id or (
            group is not None and group.max_session_window < MAX_INT32)


# Shared grants kept without vhost policy (PolicyEngine._plain_grants).
PLAIN_GRANTS = 1024


class PolicyEngine:
    def __init__(self, resolver: Resolver = resolve) -> None:
        # Looks up remoteHosts host names when a vhost is set (tests and fuzzing pass a fake).
        self.resolver = resolver
        self.max_connections = UNLIMITED
        self.max_message_size = 0
        self.enable_vhost_policy = False
        self.default_vhost = "$default"
        self.policy_dir = ""
        self.vhosts: Dict[str, VhostSettings] = {}
        self._by_alias: Dict[str, str] = {}
        self.stats: Dict[str, VhostStats] = {}
        self.totals = GlobalStats()
        # Without vhost policy a grant holds no counters and is never changed, and most
        # connections share their vhost, user and host: one grant serves them all (0.08 KB
        # a connection otherwise). Bounded: emptied when full.
        self._plain_grants: Dict[Tuple[str, str, str, int], ConnectionGrant] = {}

    # ---- configuration ------------------------------------------------------------------
    def configure(self, attrs: Dict[str, Any]) -> None:
        from .settings import _bool, _int  # the same checks as vhost attributes

        max_connections = _int(attrs.get("maxConnections", UNLIMITED), "policy: maxConnections")
        max_message_size = _int(attrs.get("maxMessageSize") or 0, "policy: maxMessageSize")
        enable = _bool(attrs.get("enableVhostPolicy", False), "policy: enableVhostPolicy")
        default_vhost = attrs.get("defaultVhost", "$default")
        if default_vhost is not None and not isinstance(default_vhost, str):
            raise PolicyError(f"policy: defaultVhost: expected a string, got {default_vhost!r}")
        self.max_connections = max_connections
        self.max_message_size = max_message_size
        self.enable_vhost_policy = enable
        self.default_vhost = (default_vhost or "").strip()
        self.policy_dir = str(attrs.get("policyDir") or "")

    def set_vhost(self, settings: VhostSettings) -> None:
        """Add or replace a vhost; connections opened from now on use it. Host names in its
        remoteHosts are looked up here, once."""
        for alias in settings.aliases:
            owner = self._by_alias.get(alias)
            if (owner is not None and owner != settings.hostname) or (
                    alias in self.vhosts and alias != settings.hostname):
                raise PolicyError(f"vhost {settings.hostname!r}: aliases: {alias!r} already names vhost "
                                  f"{owner or alias!r}")
        self.remove_vhost(settings.hostname, keep_stats=True)
        self.vhosts[settings.hostname] = settings
        for alias in settings.aliases:
            self._by_alias[alias] = settings.hostname
        self.stats.setdefault(settings.hostname, VhostStats(settings.hostname))
        for group in settings.groups.values():
            resolve_host_names(group.remote_hosts, self.resolver)

    def remove_vhost(self, hostname: str, keep_stats: bool = False) -> None:
        old = self.vhosts.pop(hostname, None)
        if old is not None:
            for alias in old.aliases:
                self._by_alias.pop(alias, None)
        stats = self.stats.get(hostname)
        if not keep_stats and stats is not None and stats.current == 0:
            del self.stats[hostname]

    def lookup(self, hostname: str | None) -> VhostSettings | None:
        """The vhost for an open's hostname: by name, by alias, else the default vhost."""
        name = (hostname or "").strip()
        found = self.vhosts.get(name)
        if found is None and name in self._by_alias:
            found = self.vhosts.get(self._by_alias[name])
        if found is None and self.default_vhost:
            found = self.vhosts.get(self.default_vhost)
        return found

    # ---- connections --------------------------------------------------------------------
    def socket_accepted(self) -> Denial | None:
        """A user connection arrived: the global limit, always enforced (book 2.6.2)."""
        totals = self.totals
        totals.connections_processed += 1
        if totals.connections_current >= self.max_connections:
            totals.connections_denied += 1
            totals.total_denials += 1
            return Denial(LIMIT, f"{CONNECTION_DISALLOWED}: maxConnections ({self.max_connections}) "
                                 f"connections are open")
        totals.connections_current += 1
        return None

    def socket_closed(self) -> None:
        self.totals.connections_current = max(0, self.totals.connections_current - 1)

    def open(self, hostname: str | None, user: str, host: str) -> ConnectionGrant | Denial:
        """The peer's open arrived: allow (with its group's limits) or deny."""
        if not self.enable_vhost_policy:
            key = (hostname or "", user, host, self.max_message_size)
            grant = self._plain_grants.get(key)
            if grant is None:
                if len(self._plain_grants) >= PLAIN_GRANTS:
                    self._plain_grants.clear()
                grant = self._plain_grants[key] = ConnectionGrant(*key[:3], None, None, key[3])
            return grant
        vhost = self.lookup(hostname)
        if vhost is None:
            return self._deny_open(None, f"no vhost policy for {hostname or '(no hostname)'!r} and no "
                                         f"default vhost")
        stats = self.stats[vhost.hostname]
        group = vhost.group_for(user)
        if group is None:
            why = ("user is in no group and allowUnknownUser is false" if not vhost.allow_unknown_user
                   else "user is in no group and the vhost has no '$default' group")
            return self._deny_open(stats, f"vhost {vhost.hostname!r} denies user {user!r}: {why}")
        from .rules import host_allowed

        if not host_allowed(group.remote_hosts, host):
            return self._deny_open(stats, f"vhost {vhost.hostname!r} group {group.name!r}: remoteHosts "
                                          f"does not allow {host!r}")
        if stats.current >= vhost.max_connections:
            return self._deny_open(stats, f"vhost {vhost.hostname!r}: maxConnections "
                                          f"({vhost.max_connections}) reached")
        per_user = group.max_connections_per_user
        if per_user is None:
            per_user = vhost.max_connections_per_user
        if stats.per_user[user] >= per_user:
            return self._deny_open(stats, f"vhost {vhost.hostname!r}: maxConnectionsPerUser ({per_user}) "
                                          f"reached for user {user!r}")
        per_host = group.max_connections_per_host
        if per_host is None:
            per_host = vhost.max_connections_per_host
        if stats.per_host[host] >= per_host:
            return self._deny_open(stats, f"vhost {vhost.hostname!r}: maxConnectionsPerHost ({per_host}) "
                                          f"reached for host {host!r}")
        stats.connections_approved += 1
        stats.per_user[user] += 1
        stats.per_host[host] += 1
        size = group.max_message_size or self.max_message_size
        return ConnectionGrant(vhost.hostname, user, host, group, stats, size)

    def connector(self, vhost_name: str, user: str) -> ConnectionGrant | Denial:
        """A connector's policyVhost: its outgoing connection is policed by that vhost's
        '$connector' group (qdrouterd: qd_policy_amqp_open_connector); without one, it is
        closed."""
        name = vhost_name.strip()
        vhost = self.vhosts.get(name) or self.vhosts.get(self._by_alias.get(name, ""))
        group = vhost.groups.get(CONNECTOR_GROUP) if vhost is not None else None
        if vhost is None or group is None:
            return Denial(LIMIT, f"{CONNECTION_DISALLOWED}: connector policyVhost {name!r} names no vhost "
                                 f"with a {CONNECTOR_GROUP!r} group")
        size = group.max_message_size or self.max_message_size
        return ConnectionGrant(vhost.hostname, user, "", group, self.stats[vhost.hostname], size,
                               outgoing=True)

    def _deny_open(self, stats: VhostStats | None, why: str) -> Denial:
        """qdrouterd refuses every open its vhost policy denies alike: a close with
        amqp:resource-limit-exceeded (policy.c qd_policy_amqp_open), whatever the rule.
        Counted as qdrouterd counts it: in the vhost's connectionsDenied, not in the policy
        entity's counters (those count the global limit's refusals). An open no vhost
        takes is counted there, where qdrouterd counts it nowhere."""
        if stats is not None:
            stats.connections_denied += 1
        else:
            self.totals.connections_denied += 1
            self.totals.total_denials += 1
        return Denial(LIMIT, f"{CONNECTION_DISALLOWED}: {why}")

    def closed(self, grant: ConnectionGrant) -> None:
        stats = grant.stats
        if stats is None or grant.outgoing:
            grant.stats = None
            return
        for counter, key in ((stats.per_user, grant.user), (stats.per_host, grant.host)):
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]
        grant.stats = None
        if stats.hostname not in self.vhosts and stats.current == 0:
            self.stats.pop(stats.hostname, None)

    # ---- sessions, links, messages ------------------------------------------------------
    def session(self, grant: ConnectionGrant, sessions_open: int) -> Denial | None:
        group = grant.group
        if group is None or sessions_open < group.max_sessions:
            return None
        self._count(grant, "session_denied")
        return Denial(LIMIT, f"{SESSION_DISALLOWED}: vhost {grant.vhost!r} group {group.name!r}: maxSessions "
                             f"({group.max_sessions}) reached")

    def sender(self, grant: ConnectionGrant, senders_open: int, target: str | None,
               capabilities: Sequence[str] = ()) -> Denial | None:
        """A client's sending link (the router receives); target None is the anonymous sender.
        The checks and their order are qdrouterd's (policy.c qd_policy_approve_amqp_sender_link)."""
        group = grant.group
        if group is None:
            return None
        where = f"{LINK_DISALLOWED}: vhost {grant.vhost!r} group {group.name!r}"
        denial = None
        if senders_open >= group.max_senders:
            denial = Denial(LIMIT, f"{where}: maxSenders ({group.max_senders}) reached")
        elif target is None:
            if not group.allow_anonymous_sender:
                denial = Denial(UNAUTHORIZED, f"{where}: allowAnonymousSender is false")
        else:
            denial = self._terminus(group, where, capabilities) or (
                None if group.target_allowed(target, grant.user)
                else Denial(UNAUTHORIZED, f"{where}: targets do not allow {target!r}"))
        if denial is not None:
            self._count(grant, "sender_denied")
        return denial

    def receiver(self, grant: ConnectionGrant, receivers_open: int, source: str | None,
                 dynamic: bool, capabilities: Sequence[str] = ()) -> Denial | None:
        """A client's receiving link (qdrouterd: qd_policy_approve_amqp_receiver_link)."""
        group = grant.group
        if group is None:
            return None
        where = f"{LINK_DISALLOWED}: vhost {grant.vhost!r} group {group.name!r}"
        denial = None
        if receivers_open >= group.max_receivers:
            denial = Denial(LIMIT, f"{where}: maxReceivers ({group.max_receivers}) reached")
        elif dynamic:
            if not group.allow_dynamic_source:
                denial = Denial(UNAUTHORIZED, f"{where}: allowDynamicSource is false")
        elif source is None:
            denial = Denial(UNAUTHORIZED, f"{where}: a receiving link needs a source address")
        else:
            denial = self._terminus(group, where, capabilities) or (
                None if group.source_allowed(source, grant.user)
                else Denial(UNAUTHORIZED, f"{where}: sources do not allow {source!r}"))
        if denial is not None:
            # (qdrouterd counts a receiver refused for its waypoint or fallback capability in
            # senderDenied; here every refused receiver is a receiverDenied.)
            self._count(grant, "receiver_denied")
        return denial

    @staticmethod
    def _terminus(group: GroupSettings, where: str, capabilities: Sequence[str]) -> Denial | None:
        """allowWaypointLinks and allowFallbackLinks: the terminus's capabilities. qdrouterd
        looks at a lone capability symbol only; every capability is looked at here, so one
        sent in an array is no way round the rule."""
        if not group.allow_waypoint_links and any(c.startswith(WAYPOINT_CAPABILITY) for c in capabilities):
            return Denial(UNAUTHORIZED, f"{where}: allowWaypointLinks is false")
        if not group.allow_fallback_links and FALLBACK_CAPABILITY in capabilities:
            return Denial(UNAUTHORIZED, f"{where}: allowFallbackLinks is false")
        return None

    def message(self, grant: ConnectionGrant, size: int, user_id: bytes | None) -> Denial | None:
        """A complete message from a client: its size, and its user-id unless proxying is
        allowed (a blank user-id is no claim: qdrouterd lets it pass)."""
        if grant.max_message_size and size > grant.max_message_size:
            self.totals.max_message_size_denied += 1
            self.totals.total_denials += 1
            if grant.stats is not None:
                grant.stats.max_message_size_denied += 1
            return Denial(MESSAGE_SIZE, f"{OVERSIZE}: the message reached {size} bytes, above "
                                        f"maxMessageSize ({grant.max_message_size})")
        if user_id and grant.check_user_id and user_id != grant.user.encode():
            # (counted in the vhost only: qdrouterd's totalDenials leaves it out)
            if grant.stats is not None:
                grant.stats.user_id_denied += 1
            claimed = user_id.decode("utf-8", "replace")
            return Denial(UNAUTHORIZED, f"{USER_ID_VIOLATION}: user_id {claimed!r} is not the authenticated "
                                        f"user {grant.user!r} and allowUserIdProxy is false")
        return None

    def message_target(self, grant: ConnectionGrant, address: str) -> Denial | None:
        """The address a message on an anonymous link is routed by (its ``to``, or a trusted
        x-opt-qd.to), checked against the user's targets as an attach's target is: an
        anonymous sender may send only where a named sender could attach."""
        group = grant.group
        if group is None or group.target_allowed(address, grant.user):
            return None
        # (counted in the vhost only: qdrouterd's totalDenials leaves it out)
        if grant.stats is not None:
            grant.stats.target_denied += 1
        return Denial(UNAUTHORIZED, TARGET_VIOLATION)

    def _count(self, grant: ConnectionGrant, counter: str) -> None:
        if grant.stats is not None:
            setattr(grant.stats, counter, getattr(grant.stats, counter) + 1)
        if counter != "session_denied":
            self.totals.links_denied += 1
        self.totals.total_denials += 1

    # ---- negotiated limits --------------------------------------------------------------
    @staticmethod
    def frame_size(grant: ConnectionGrant, listener_max: int) -> int:
        group = grant.group
        if group is None or group.max_frame_size >= MAX_INT32:
            return listener_max
        return group.max_frame_size

    def vhost_rows(self) -> list:
        return [stats.row() for stats in self.stats.values()]
