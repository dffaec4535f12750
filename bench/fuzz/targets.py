"""Fuzz targets: the config parser, the management request decoder and the policy rule
parser. Each ``check_*`` feeds one input and raises ``FuzzFailure`` if the code under test
crashed (an exception other than its documented error) or gave an error that names nothing.

Shared by the short CI run (tests/security/test_fuzz.py, hypothesis) and the million-case
run (bench/fuzz/run_fuzz.py)."""

from __future__ import annotations

import ipaddress
from typing import Any, List

from proton import Message

from qdrouter.config.errors import ConfigError
from qdrouter.config.loader import parse_config_text
from qdrouter.management.messages import UndecodableRequest, check_request, decode_request
from qdrouter.management.status import ManagementStatus
from qdrouter.policy import ConnectionGrant, PolicyEngine, PolicyError, parse_vhost
from qdrouter.policy.rules import (
    address_allowed,
    host_allowed,
    parse_addresses,
    parse_hosts,
    resolve_host_names,
)


class FuzzFailure(AssertionError):
    """The code under test misbehaved on this input."""


def _clear(message: str, what: str) -> None:
    if not message or not message.strip():
        raise FuzzFailure(f"{what}: an error without a message")
    if "Traceback" in message:
        raise FuzzFailure(f"{what}: an error message holding a traceback: {message[:200]}")


def check_config(text: str) -> int:
    """Config text (qdrouterd.conf or JSON): entities, or a ConfigError naming the problem.
    Vhost entities that parse are also handed to the policy parser."""
    try:
        entities = parse_config_text(text, "fuzz.conf")
    except ConfigError as error:
        _clear(str(error), "config")
        if "fuzz.conf" not in str(error):
            raise FuzzFailure(f"config: error does not name the file: {error}") from None
        return 0
    except RecursionError:
        raise FuzzFailure("config: recursion limit hit") from None
    except Exception as error:
        raise FuzzFailure(f"config: {type(error).__name__}: {error}") from error
    for entity in entities:
        if entity.type.short_name == "vhost":
            check_policy(dict(entity.attributes))
    return len(entities)


def check_management(raw: bytes) -> int:
    """Encoded request bytes: a Request, or UndecodableRequest / a 4xx ManagementStatus."""
    try:
        request = decode_request(raw)
    except UndecodableRequest as error:
        _clear(str(error), "management decode")
        return 0
    except Exception as error:
        raise FuzzFailure(f"management decode: {type(error).__name__}: {error}") from error
    try:
        check_request(request)
    except ManagementStatus as error:
        if not 400 <= error.code < 500:
            raise FuzzFailure(f"management check: status {error.code}: {error.description}") from None
        _clear(error.description, "management check")
        return 0
    except Exception as error:
        raise FuzzFailure(f"management check: {type(error).__name__}: {error}") from error
    return 1


PROBES = (("alice", "127.0.0.1", "chat.1"), ("bob", "::1", "news"), ("", "10.0.0.1", ""),
          ("{user}", "192.0.2.7", "tmp_{user}"), ("x" * 300, "fe80::1", "a*"))


def check_policy(vhost: Any) -> int:
    """A vhost definition (any JSON-like value): a VhostSettings whose decisions never raise,
    or a PolicyError naming the field."""
    try:
        settings = parse_vhost(vhost)
    except PolicyError as error:
        _clear(str(error), "policy")
        return 0
    except RecursionError:
        raise FuzzFailure("policy: recursion limit hit") from None
    except Exception as error:
        raise FuzzFailure(f"policy: {type(error).__name__}: {error}") from error
    engine = PolicyEngine(resolver=_fake_resolver)
    engine.configure({"enableVhostPolicy": True, "defaultVhost": settings.hostname})
    try:
        engine.set_vhost(settings)
        for user, host, address in PROBES:
            decision = engine.open(settings.hostname, user, host)
            if isinstance(decision, ConnectionGrant):
                engine.sender(decision, 0, address or None)
                engine.receiver(decision, 0, address or None, not address)
                engine.message(decision, len(address), user.encode())
                engine.closed(decision)
    except PolicyError as error:
        _clear(str(error), "policy")
    except Exception as error:
        raise FuzzFailure(f"policy decisions: {type(error).__name__}: {error}") from error
    return 1


def _fake_resolver(name: str) -> frozenset:
    """A fake DNS (the fuzzer's host names are random; real lookups would measure the
    network): every name stands for one documentation address."""
    return frozenset({ipaddress.ip_address("192.0.2.1")})


def check_rules(hosts: Any, addresses: Any) -> int:
    """remoteHosts and sources/targets rule lists alone."""
    try:
        host_rules = parse_hosts(hosts)
        address_rules = parse_addresses(addresses, "sources")
    except PolicyError as error:
        _clear(str(error), "rules")
        return 0
    except Exception as error:
        raise FuzzFailure(f"rules: {type(error).__name__}: {error}") from error
    resolve_host_names(host_rules, _fake_resolver)
    for user, host, address in PROBES:
        host_allowed(host_rules, host)
        address_allowed(address_rules, address, user)
    return 1


# ---- seeds ------------------------------------------------------------------------------
_ROUTER = "router {\n    mode: standalone\n    id: R\n}\n"
CONFIG_SEEDS: List[str] = [
    _ROUTER + "listener {\n    port: 5672\n    saslMechanisms: ANONYMOUS\n}\n",
    _ROUTER + "policy {\n    maxConnections: 100\n    enableVhostPolicy: true\n}\n"
    "vhost {\n    name: $default\n"
    "    maxConnectionsPerUser: 10\n    allowUnknownUser: true\n    groups: {\n        $default: {\n"
    "            remoteHosts: *\n            sources: *\n            targets: *\n        }\n    }\n}\n",
    _ROUTER + "vhost {\n    name: example.com\n    allowUnknownUser: true\n    groups: {\n        admin: {\n"
    "            users: alice, bob\n            remoteHosts: 127.0.0.1, ::1\n            sources: *\n"
    "            targets: *\n        },\n        $default: {\n            remoteHosts: *\n"
    "            sources: news*, sports*, chat*\n            targets: chat*\n        }\n    }\n}\n",
    _ROUTER + "sslProfile {\n    name: tls\n    certFile: /x.pem\n    password: env:PW\n}\n"
    "connector {\n    host: h\n    port: amqps\n    sslProfile: tls\n    role: inter-router\n}\n",
    '[["router", {"mode": "interior", "id": "A"}], ["address", {"prefix": "q", "distribution": "closest"}],'
    ' ["linkRoute", {"prefix": "b.", "direction": "in", "connection": "broker"}]]',
    _ROUTER + "address {\n    prefix: a\n    distribution: balanced\n}\n"
    "autoLink {\n    address: q\n    direction: out\n"
    "    connection: c\n}\nlog {\n    module: DEFAULT\n    enable: debug+\n}\n",
]


def management_seeds() -> List[bytes]:
    seeds = []
    for properties, body in (
        ({"operation": "QUERY", "type": "org.amqp.management", "entityType": "connection"},
         {"attributeNames": []}),
        ({"operation": "CREATE", "type": "vhost", "name": "v"},
         {"hostname": "v", "groups": {"g": {"users": "a,b", "remoteHosts": "*"}}}),
        ({"operation": "READ", "identity": "listener/1"}, None),
        ({"operation": "UPDATE", "type": "log", "name": "log/DEFAULT"}, {"enable": "trace+"}),
        ({"operation": "DELETE", "type": "router.config.address", "name": "a"}, None),
        ({"operation": "GET-OPERATIONS", "type": "org.amqp.management", "entityType": None}, None),
    ):
        message = Message(body=body, properties=properties, reply_to="amqp:/_topo/0/R/temp.1",
                          correlation_id=7, address="$management")
        seeds.append(bytes(message.encode()))
    return seeds


POLICY_SEEDS: List[Any] = [
    {"hostname": "example.com", "allowUnknownUser": True, "maxConnections": 10, "aliases": "a.com,b.com",
     "groups": {"admin": {"users": "alice, bob", "remoteHosts": "127.0.0.1, ::1, 10.0.0.0-10.0.0.255",
                          "sources": "*", "targets": ["chat*", "tmp_{user}"], "maxFrameSize": 10000,
                          "maxSessionWindow": 500, "maxSessions": 1, "allowUserIdProxy": True},
                "$default": {"remoteHosts": "*", "sources": "news*, {user}-home-*", "targets": "chat*",
                             "maxMessageSize": 1024, "maxSenders": 2, "allowDynamicSource": "yes"}}},
    {"id": "traders.com", "maxConnectionsPerRemoteHost": 3,
     "groups": {"feeds": {"users": ["nyse-feed", "nasdaq-feed"], "remoteHosts": "localhost",
                          "targetPattern": "prices.#", "sourcePattern": "orders.*.{user}"}}},
]
