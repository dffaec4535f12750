"""Vhost definitions as the engine uses them, parsed and checked from attribute maps (config
file sections, policyDir JSON files, management requests)."""

from __future__ import annotations

import logging
from typing import Any, Dict, Tuple

from .errors import PolicyError
from .rules import (
    AddressPattern,
    AddressRule,
    HostRule,
    parse_addresses,
    parse_hosts,
    parse_list,
    parse_patterns,
)

log = logging.getLogger("qdrouter.POLICY")

UNLIMITED = 65535
MAX_INT32 = 2147483647
DEFAULT_GROUP = "$default"

# Group attributes: name -> (kind, default). Defaults are the book's (2.6.3).
_GROUP_INTS: Dict[str, int | None] = {
    "maxConnectionsPerUser": None, "maxConnectionsPerHost": None, "maxMessageSize": None,
    "maxFrameSize": MAX_INT32, "maxSessionWindow": MAX_INT32, "maxSessions": UNLIMITED,
    "maxSenders": MAX_INT32, "maxReceivers": MAX_INT32,
}
_GROUP_BOOLS = {
    "allowDynamicSource": False, "allowAnonymousSender": False, "allowUserIdProxy": False,
    "allowWaypointLinks": True, "allowDynamicLinkRoutes": True, "allowAdminStatusUpdate": True,
    "allowFallbackLinks": True,
}
_GROUP_LISTS = ("users", "remoteHosts", "sources", "targets", "sourcePattern", "targetPattern")
GROUP_ATTRIBUTES = frozenset((*_GROUP_INTS, *_GROUP_BOOLS, *_GROUP_LISTS))

_VHOST_INTS = {"maxConnections": UNLIMITED, "maxConnectionsPerUser": UNLIMITED,
               "maxConnectionsPerHost": UNLIMITED, "maxMessageSize": None}
_VHOST_ALIASES = {"id": "hostname", "maxConnectionsPerRemoteHost": "maxConnectionsPerHost"}
_GROUP_ALIASES = {"maxConnectionsPerRemoteHost": "maxConnectionsPerHost"}
VHOST_ATTRIBUTES = frozenset(("hostname", "name", "identity", "type", "aliases", "allowUnknownUser",
                              "groups", *_VHOST_INTS, *_VHOST_ALIASES))


def _int(value: Any, field: str, low: int = 0, high: int = MAX_INT32) -> int:
    if isinstance(value, bool):
        raise PolicyError(f"{field}: expected an integer, got {value!r}")
    if isinstance(value, str):
        try:
            value = int(value.strip(), 0)
        except ValueError:
            raise PolicyError(f"{field}: expected an integer, got {value!r}") from None
    if not isinstance(value, int):
        raise PolicyError(f"{field}: expected an integer, got {value!r}")
    if not low <= value <= high:
        raise PolicyError(f"{field}: {value} is out of range ({low} to {high})")
    return value


def _bool(value: Any, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise PolicyError(f"{field}: expected true or false, got {value!r}")


class GroupSettings:
    """One user group of one vhost, with every limit resolved to a number."""

    def __init__(self, vhost: str, name: str, attrs: Dict[str, Any], vhost_max_message_size: int | None
                 ) -> None:
        where = f"vhost {vhost!r}: group {name!r}"
        if not isinstance(attrs, dict):
            raise PolicyError(f"{where}: settings must be a map, got {attrs!r}")
        attrs = {_GROUP_ALIASES.get(key, key): value for key, value in attrs.items()}
        for key in list(attrs):
            if key in GROUP_ATTRIBUTES:
                continue
            if key not in VHOST_ATTRIBUTES:
                raise PolicyError(f"{where}: unknown attribute {key!r}")
            # A vhost's option written in a group (maxConnections, say) limits nothing there:
            # qdrouterd loads such a policy and warns, and so does qdmesh (a name that is no
            # policy option at all is still refused, as a typo would be).
            log.warning("Policy vhost '%s' user group '%s' option '%s' is ignored.", vhost, name, key)
            del attrs[key]
        self.vhost = vhost
        self.name = name
        ints = {key: (_int(attrs[key], f"{where}: {key}") if attrs.get(key) is not None else default)
                for key, default in _GROUP_INTS.items()}
        self.max_connections_per_user: int | None = ints["maxConnectionsPerUser"]
        self.max_connections_per_host: int | None = ints["maxConnectionsPerHost"]
        group_size = ints["maxMessageSize"]
        self.max_message_size: int = group_size if group_size is not None else (vhost_max_message_size or 0)
        # 0 (or absent) leaves each of these to the listener, or unlimited, as in qdrouterd
        # (policy.c tests each for non-zero before applying it).
        self.max_frame_size: int = int(ints["maxFrameSize"] or MAX_INT32)
        # In octets, as qdrouterd 1.19 defines it: the session's incoming capacity.
        self.max_session_window: int = int(ints["maxSessionWindow"] or MAX_INT32)
        self.max_sessions: int = int(ints["maxSessions"] or UNLIMITED)
        self.max_senders: int = int(ints["maxSenders"] or MAX_INT32)
        self.max_receivers: int = int(ints["maxReceivers"] or MAX_INT32)
        bools = {key: (_bool(attrs[key], f"{where}: {key}") if attrs.get(key) is not None else default)
                 for key, default in _GROUP_BOOLS.items()}
        self.allow_dynamic_source = bools["allowDynamicSource"]
        self.allow_anonymous_sender = bools["allowAnonymousSender"]
        self.allow_user_id_proxy = bools["allowUserIdProxy"]
        self.allow_waypoint_links = bools["allowWaypointLinks"]
        self.allow_dynamic_link_routes = bools["allowDynamicLinkRoutes"]
        self.allow_admin_status_update = bools["allowAdminStatusUpdate"]
        self.allow_fallback_links = bools["allowFallbackLinks"]
        self.users: Tuple[str, ...] = tuple(parse_list(attrs.get("users"), f"{where}: users"))
        self.remote_hosts: Tuple[HostRule, ...] = parse_hosts(attrs.get("remoteHosts"),
                                                              f"{where}: remoteHosts")
        self.sources: Tuple[AddressRule, ...] = parse_addresses(attrs.get("sources"), f"{where}: sources")
        self.targets: Tuple[AddressRule, ...] = parse_addresses(attrs.get("targets"), f"{where}: targets")
        self.source_patterns: Tuple[AddressPattern, ...] = parse_patterns(
            attrs.get("sourcePattern"), f"{where}: sourcePattern")
        self.target_patterns: Tuple[AddressPattern, ...] = parse_patterns(
            attrs.get("targetPattern"), f"{where}: targetPattern")
        if self.sources and self.source_patterns:
            raise PolicyError(f"{where}: give sources or sourcePattern, not both")
        if self.targets and self.target_patterns:
            raise PolicyError(f"{where}: give targets or targetPattern, not both")

    def source_allowed(self, address: str, user: str) -> bool:
        rules = self.source_patterns or self.sources
        return any(rule.matches(address, user) for rule in rules)

    def target_allowed(self, address: str, user: str) -> bool:
        rules = self.target_patterns or self.targets
        return any(rule.matches(address, user) for rule in rules)


class VhostSettings:
    """One vhost: its connection limits and its user groups."""

    def __init__(self, attrs: Dict[str, Any]) -> None:
        if not isinstance(attrs, dict):
            raise PolicyError(f"vhost: expected a map of attributes, got {attrs!r}")
        attrs = {_VHOST_ALIASES.get(key, key): value for key, value in attrs.items()}
        # An empty hostname names the vhost '' (qdrouterd creates it too); only a missing one is
        # refused.
        hostname = attrs.get("hostname")
        if not isinstance(hostname, str) or (not hostname.strip() and attrs.get("name")):
            hostname = attrs.get("name")
        if not isinstance(hostname, str):
            raise PolicyError("vhost: attribute 'hostname' is required (a string)")
        self.hostname = hostname.strip()
        where = f"vhost {self.hostname!r}"
        for key in attrs:
            if key not in VHOST_ATTRIBUTES:
                raise PolicyError(f"{where}: unknown attribute {key!r}")
        ints = {key: (_int(attrs[key], f"{where}: {key}") if attrs.get(key) is not None else default)
                for key, default in _VHOST_INTS.items()}
        self.max_connections = int(ints["maxConnections"] or 0)
        self.max_connections_per_user = int(ints["maxConnectionsPerUser"] or 0)
        self.max_connections_per_host = int(ints["maxConnectionsPerHost"] or 0)
        self.max_message_size: int | None = ints["maxMessageSize"]
        self.aliases: Tuple[str, ...] = tuple(parse_list(attrs.get("aliases"), f"{where}: aliases"))
        self.allow_unknown_user = _bool(attrs.get("allowUnknownUser", False), f"{where}: allowUnknownUser")
        groups = attrs.get("groups")
        if groups is None:
            groups = {}
        if not isinstance(groups, dict):
            raise PolicyError(f"{where}: groups: expected a map of group name to settings, got {groups!r}")
        self.groups: Dict[str, GroupSettings] = {}
        self.group_of_user: Dict[str, str] = {}
        for name, settings in groups.items():
            if not isinstance(name, str) or not name.strip():
                raise PolicyError(f"{where}: groups: group names must be non-empty strings, got {name!r}")
            group = GroupSettings(self.hostname, name, settings, self.max_message_size)
            self.groups[name] = group
            for user in group.users:
                other = self.group_of_user.get(user)
                if other is not None:
                    raise PolicyError(f"{where}: group {name!r}: users: {user!r} is already in group "
                                      f"{other!r} (a user may be in one group only)")
                self.group_of_user[user] = name

    def group_for(self, user: str) -> GroupSettings | None:
        """The user's group; unknown users get '$default' if allowUnknownUser (None: denied)."""
        name = self.group_of_user.get(user)
        if name is not None:
            return self.groups[name]
        if self.allow_unknown_user:
            return self.groups.get(DEFAULT_GROUP)
        return None


def parse_vhost(attrs: Dict[str, Any]) -> VhostSettings:
    return VhostSettings(attrs)
