"""Constraints that involve more than one attribute, or the inside of a map-valued one."""

from __future__ import annotations

import logging
import re
from typing import Callable, Dict, List, Mapping

from .attributes import CREATE, Problem, check_items
from .connection_rules import connection_warnings, connector_problems, listener_problems
from .entities_policy import VHOST_USER_GROUP_SETTINGS
from .hosts import host_problem, short_repr
from .types import EntityTypeDef

log = logging.getLogger("qdrouter.POLICY")

# A vhost's own options, which limit nothing when written in one of its groups: qdrouterd loads
# such a group with a warning, and so does qdmesh (any other unknown name is still refused).
_VHOST_ONLY_OPTIONS = ("maxConnections", "allowUnknownUser", "aliases", "hostname", "groups")

#: Attribute -> attribute whose value it takes when not given, per entity type short name.
#: Policy examples name a vhost only by its `name`; that name is the hostname it governs.
FALLBACKS: Mapping[str, Mapping[str, str]] = {"vhost": {"hostname": "name"}}

_SERVICE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")
_LOG_LEVEL = re.compile(r"(trace|debug|info|notice|warning|error|critical)\+?")

Written = Mapping[str, str]
Check = Callable[[Mapping[str, object], Written], List[Problem]]


def _name(written: Written, attr: str) -> str:
    return written.get(attr, attr)


def _one_of(first: str, second: str, *, required: bool) -> Check:
    def check(attrs: Mapping[str, object], written: Written) -> list[Problem]:
        given = [a for a in (first, second) if attrs.get(a) is not None]
        empty = [a for a in given if isinstance(attrs.get(a), str) and not str(attrs.get(a)).strip()]
        if empty and first == "prefix":
            # An empty prefix or pattern would match every address, $management's too: refused
            # in qdrouterd's words.
            return [Problem(f"{empty[0].capitalize()} must be a non-empty string type (attribute "
                            f"{_name(written, empty[0])!r})", _name(written, empty[0]))]
        if len(given) == 2:
            return [Problem(f"give either {_name(written, first)!r} or {_name(written, second)!r}, "
                            f"not both", _name(written, second))]
        if required and not given:
            return [Problem(f"one of {first!r} or {second!r} is required")]
        return []
    return check


def _router_id(attrs: Mapping[str, object], written: Written) -> list[Problem]:
    rid = attrs.get("id")
    if isinstance(rid, str) and (not rid or any(c.isspace() or not c.isprintable() for c in rid)):
        return [Problem(f"attribute {_name(written, 'id')!r}: {short_repr(rid)} is not a valid router id "
                        f"(it must be non-empty, without whitespace or control characters)",
                        _name(written, "id"))]
    return []


def _host_and_port(attrs: Mapping[str, object], written: Written) -> list[Problem]:
    problems = []
    port = attrs.get("port")
    if isinstance(port, str) and not (_SERVICE_NAME.fullmatch(port) or
                                      (port.isascii() and port.isdigit() and int(port) <= 65535)):
        problems.append(Problem(f"attribute {_name(written, 'port')!r}: {short_repr(port)} is not a port "
                                f"number (0 to 65535) or service name", _name(written, "port")))
    host = attrs.get("host")
    why = host_problem(host) if isinstance(host, str) else None
    if why is not None:
        problems.append(Problem(f"attribute {_name(written, 'host')!r}: {short_repr(host)} {why}",
                                _name(written, "host")))
    return problems


def _metrics_bound(attrs: Mapping[str, object], written: Written) -> list[Problem]:
    # Negative values other than -1 would silently mean "no bound": say so instead.
    bound = attrs.get("metricsMaxAddresses")
    if isinstance(bound, int) and bound < -1:
        name = _name(written, "metricsMaxAddresses")
        return [Problem(f"attribute {name!r}: {bound} is not a number of addresses (0 or more, or -1 "
                        f"for no bound)", name)]
    return []


def _log_levels(attrs: Mapping[str, object], written: Written) -> list[Problem]:
    enable = attrs.get("enable")
    if not isinstance(enable, str):
        return []
    words = [w.strip() for w in enable.split(",")]
    if words == ["none"] or all(_LOG_LEVEL.fullmatch(w) for w in words):
        return []
    bad = next(w for w in words if not _LOG_LEVEL.fullmatch(w))
    return [Problem(f"attribute {_name(written, 'enable')!r}: {short_repr(bad)} is not a log level (use a "
                    f"comma-separated list of trace, debug, info, notice, warning, error, critical, "
                    f"each optionally followed by '+', or 'none')", _name(written, "enable"))]


def _ordinals(attrs: Mapping[str, object], written: Written) -> list[Problem]:
    """sslProfile (qdmesh): no connection could be valid above the profile's own ordinal."""
    oldest, ordinal = attrs.get("oldestValidOrdinal"), attrs.get("ordinal")
    if isinstance(oldest, int) and oldest > (ordinal if isinstance(ordinal, int) else 0):
        return [Problem(f"attribute {_name(written, 'oldestValidOrdinal')!r}: {oldest} is above the "
                        f"ordinal {ordinal or 0} (no connection could be valid)")]
    return []


_CHECKS: Dict[str, List[Check]] = {
    "router": [_router_id],
    "listener": [_host_and_port, _metrics_bound, listener_problems],
    "connector": [_host_and_port, connector_problems],
    "authServicePlugin": [_host_and_port],
    "sslProfile": [_ordinals],
    "log": [_log_levels],
    "router.config.address": [_one_of("prefix", "pattern", required=True)],
    "router.config.linkRoute": [_one_of("prefix", "pattern", required=True),
                                _one_of("containerId", "connection", required=False)],
    "router.config.autoLink": [_one_of("containerId", "connection", required=False)],
}


def check_entity(etype: EntityTypeDef, attrs: Mapping[str, object],
                 written: Written = {}) -> list[Problem]:  # noqa: B006 - never mutated
    """Problems with the combination of `attrs` (complete, canonically named, coerced values).

    `written` maps canonical names to the spelling the user used, for the messages.
    """
    problems: list[Problem] = []
    for check in _CHECKS.get(etype.short_name, ()):
        problems.extend(check(attrs, written))
    return problems


def entity_warnings(etype: EntityTypeDef, attrs: Mapping[str, object],
                    written: Written = {}) -> list[Problem]:  # noqa: B006 - never mutated
    """Accepted values worth telling the user about (they change nothing)."""
    if etype.short_name in ("listener", "connector"):
        return connection_warnings(etype.short_name, attrs, written)
    return []


def normalize_groups(groups: Mapping[str, object], attr_written: str) -> tuple[dict, list[Problem]]:
    """A vhost's `groups` map with every group's settings checked, coerced and defaulted.

    Required group settings are not enforced: the '$default' group typically names no users.
    """
    result: dict[str, object] = {}
    problems: list[Problem] = []
    for group, settings in groups.items():
        prefix = f"attribute {attr_written!r}: group {group!r}"
        if not isinstance(settings, Mapping):
            problems.append(Problem(f"{prefix}: expected a map of settings, not {settings!r}",
                                    attr_written, (str(group),)))
            continue
        misplaced = [key for key in settings if key in _VHOST_ONLY_OPTIONS]
        for key in misplaced:
            log.warning("Policy vhost group '%s' option '%s' is ignored.", group, key)
        settings = {key: value for key, value in settings.items() if key not in misplaced}
        checked = check_items(VHOST_USER_GROUP_SETTINGS, settings, mode=CREATE, check_required=False)
        for p in checked.problems:
            problems.append(Problem(f"{prefix}: {p.message}", attr_written,
                                    (str(group),) + ((p.attribute,) if p.attribute else ())))
        result[group] = checked.attributes
    return result, problems
