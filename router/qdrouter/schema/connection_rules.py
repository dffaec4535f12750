"""Rules for listeners and connectors beyond each attribute's type: what qdrouterd 1.19 refuses
in them (reserved openProperties keys, failover URLs without a host), what qdmesh does not
do and so refuses rather than silently ignore, and what both routers ignore (a warning).

Shared by the config file and management CREATE (rules.py), so both refuse the same.
"""

from __future__ import annotations

from typing import Dict, List, Mapping

from .attributes import Problem
from .hosts import short_repr

Written = Mapping[str, str]

# qdrouterd's agent.py (ConnectionBaseEntity): keys the router puts in an open itself.
RESERVED_KEYS = ("product", "version", "failover-server-list", "network-host", "port", "scheme",
                 "hostname")
RESERVED_PREFIXES = ("qd.", "x-opt-qd.")

# Attribute -> why qdmesh refuses any value but its default (None: refused when set at all).
_UNSUPPORTED: Dict[str, Dict[str, str]] = {
    "listener": {
        "multiTenant": "multi-tenant listeners (addresses prefixed with the vhost) are not "
                       "supported by qdmesh",
        "saslPlugin": "authentication by an authServicePlugin is not supported by qdmesh",
    },
    "connector": {},
}
_UNSUPPORTED_DEFAULTS = {"multiTenant": False}
_NO_MESSAGE_LOGGING = ("none", "")


def _name(written: Written, attr: str) -> str:
    return written.get(attr, attr)


def parse_failover_urls(text: str) -> List[Dict[str, str]]:
    """The failover-server-list qdrouterd sends for ``text`` (failoverlist.c): comma-separated
    ``[scheme://]host[:port]``, whitespace dropped, port 5672 unless given. ValueError if an
    item has no host."""
    items = []
    for item in "".join(c for c in text if c.isprintable() and not c.isspace()).split(","):
        scheme, _, rest = item.partition("://") if "://" in item else ("", "", item)
        host, _, port = rest.partition(":")
        if not host:
            raise ValueError(f"{short_repr(item)} has no host")
        entry = {"network-host": host, "port": port or "5672"}
        if scheme:
            entry["scheme"] = scheme
        items.append(entry)
    return items


def _open_properties(attrs: Mapping[str, object], written: Written) -> List[Problem]:
    properties = attrs.get("openProperties")
    if not isinstance(properties, Mapping) or not properties:
        return []
    name = _name(written, "openProperties")
    for key in properties:
        if not isinstance(key, str) or not key.isascii():
            return [Problem(f"attribute {name!r}: key {short_repr(key)} is not ASCII text", name)]
        if key in RESERVED_KEYS or key.startswith(RESERVED_PREFIXES):
            return [Problem(f"attribute {name!r}: key {short_repr(key)} is reserved (the router "
                            f"sets it itself)", name)]
    role = attrs.get("role")
    if role in ("inter-router", "edge"):
        return [Problem(f"attribute {name!r}: not allowed on role {role!r} connections", name)]
    return []


def _failover_urls(attrs: Mapping[str, object], written: Written) -> List[Problem]:
    text = attrs.get("failoverUrls")
    if not isinstance(text, str):
        return []
    try:
        parse_failover_urls(text)
    except ValueError as error:
        name = _name(written, "failoverUrls")
        return [Problem(f"attribute {name!r}: {error}", name)]
    return []


def _unsupported(kind: str, attrs: Mapping[str, object], written: Written) -> List[Problem]:
    problems = []
    for attr, why in _UNSUPPORTED.get(kind, {}).items():
        value = attrs.get(attr)
        if value is not None and value != _UNSUPPORTED_DEFAULTS.get(attr):
            problems.append(Problem(f"attribute {_name(written, attr)!r}: {why}", _name(written, attr)))
    logging = attrs.get("messageLoggingComponents")
    if isinstance(logging, str) and logging.strip() not in _NO_MESSAGE_LOGGING:
        name = _name(written, "messageLoggingComponents")
        problems.append(Problem(f"attribute {name!r}: {short_repr(logging)}: logging message "
                                f"components is not supported by qdmesh (use 'none')", name))
    return problems


def listener_problems(attrs: Mapping[str, object], written: Written) -> List[Problem]:
    return [*_open_properties(attrs, written), *_failover_urls(attrs, written),
            *_unsupported("listener", attrs, written)]


def connector_problems(attrs: Mapping[str, object], written: Written) -> List[Problem]:
    return [*_open_properties(attrs, written), *_unsupported("connector", attrs, written)]


def connection_warnings(kind: str, attrs: Mapping[str, object], written: Written) -> List[Problem]:
    """Accepted attributes that change nothing, as in qdrouterd 1.19: said once at load."""
    warnings = []
    if attrs.get("trustedCertsFile") is not None:
        name = _name(written, "trustedCertsFile")
        warnings.append(Problem(f"attribute {name!r} is not used: give the sslProfile's caCertFile "
                                f"instead", name))
    family = "socketAddressFamily" if kind == "listener" else "protocolFamily"
    if attrs.get(family) is not None:
        name = _name(written, family)
        warnings.append(Problem(f"attribute {name!r} is ignored, as qdrouterd 1.19 ignores it: the "
                                f"address family follows the host", name))
    if kind == "connector" and "allowRedirect" in written:
        name = written["allowRedirect"]
        warnings.append(Problem(f"attribute {name!r} is ignored, as qdrouterd 1.19 ignores it: a "
                                f"peer's redirect is not followed", name))
    if attrs.get("httpRootDir") is not None:
        name = _name(written, "httpRootDir")
        warnings.append(Problem(f"attribute {name!r} is ignored: qdmesh serves no files (its HTTP "
                                f"listeners serve /healthz, /readyz and /metrics)", name))
    if kind == "listener" and attrs.get("http") and attrs.get("websockets"):
        warnings.append(Problem("attribute 'websockets': AMQP over WebSocket is not supported by "
                                "qdmesh; this HTTP listener serves /healthz, /readyz and /metrics",
                                _name(written, "websockets")))
    return warnings
