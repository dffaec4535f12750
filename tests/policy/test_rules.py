"""The policy rule languages (Qpid Dispatch 0.7 book, 2.6.4), unit-tested on the pure module."""

from __future__ import annotations

import ipaddress

import pytest

from qdrouter.policy import ConnectionGrant, Denial, PolicyEngine, PolicyError, parse_vhost
from qdrouter.policy.rules import (
    AddressPattern,
    address_allowed,
    host_allowed,
    parse_addresses,
    parse_hosts,
    parse_list,
    parse_patterns,
    resolve_host_names,
)


@pytest.mark.parametrize("value, expected", [
    ("a, b ,c", ["a", "b", "c"]),
    (["a", "b, c"], ["a", "b", "c"]),
    ("", []),
    (None, []),
    (" , ,", []),
])
def test_lists_are_csv_strings_or_lists(value: object, expected: list) -> None:
    assert parse_list(value, "users") == expected


@pytest.mark.parametrize("value, message", [
    (5, "users: expected a comma-separated string or a list of strings"),
    (["a", 3], "users: list items must be strings"),
    ("a\x00b", "unprintable"),
])
def test_bad_lists_name_the_field(value: object, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_list(value, "users")


@pytest.mark.parametrize("rules, host, allowed", [
    ("*", "10.1.2.3", True),
    ("*", "::1", True),
    ("127.0.0.1", "127.0.0.1", True),
    ("127.0.0.1", "127.0.0.2", False),
    ("10.0.0.0-10.0.0.255", "10.0.0.77", True),
    ("10.0.0.0-10.0.0.255", "10.0.1.0", False),
    ("::1", "::1", True),
    ("::1", "127.0.0.1", False),
    ("fe80::-fe80::ffff", "fe80::1234", True),
    ("fe80::-fe80::ffff", "fe80::1:0", False),
    ("127.0.0.1", "::ffff:127.0.0.1", True),  # IPv4-mapped IPv6 peers match IPv4 rules
    ("localhost", "127.0.0.1", True),
    ("localhost", "10.9.9.9", False),
    ("", "127.0.0.1", False),  # an empty list denies all
    ("10.0.0.1, 127.0.0.1", "127.0.0.1", True),
])
def test_remote_hosts(rules: str, host: str, allowed: bool) -> None:
    parsed = parse_hosts(rules)
    resolve_host_names(parsed)  # 'localhost' is in /etc/hosts: no DNS needed
    assert host_allowed(parsed, host) is allowed


def test_host_names_are_looked_up_once_when_the_vhost_is_set() -> None:
    lookups = []

    def fake_resolver(name: str) -> frozenset:
        lookups.append(name)
        return frozenset({ipaddress.ip_address("192.0.2.10")})

    engine = PolicyEngine(resolver=fake_resolver)
    engine.configure({"enableVhostPolicy": True})
    engine.set_vhost(parse_vhost({"hostname": "v", "groups": {
        "g": {"users": "u", "remoteHosts": "gateway.example", "sources": "*", "targets": "*"}}}))
    assert lookups == ["gateway.example"]
    assert isinstance(engine.open("v", "u", "192.0.2.10"), ConnectionGrant)
    assert isinstance(engine.open("v", "u", "192.0.2.11"), Denial)
    assert lookups == ["gateway.example"]  # connections never wait for DNS


@pytest.mark.parametrize("rule, message", [
    ("10.0.0.*", "'\\*' must stand alone"),
    ("*.example.com", "'\\*' must stand alone"),
    ("10.0.0.9-10.0.0.1", "range start is above its end"),
    ("10.0.0.1-::1", "different IP versions"),
    ("10.0.0.1-banana", "range end 'banana' is not an IP address"),
    ("bad host!", "is not '\\*', an IP address, a range or a host name"),
])
def test_bad_remote_hosts_name_the_rule(rule: str, message: str) -> None:
    with pytest.raises(PolicyError, match=f"remoteHosts: .*{message}"):
        parse_hosts(rule)


@pytest.mark.parametrize("rules, address, user, allowed", [
    ("*", "anything/at/all", "u", True),
    ("", "q", "u", False),  # an empty list denies all
    ("queue1", "queue1", "u", True),
    ("queue1", "queue10", "u", False),
    ("temp*", "temp", "u", True),
    ("temp*", "temporary.x", "u", True),
    ("temp*", "tmp", "u", False),
    ("tmp_{user}", "tmp_bob", "bob", True),
    ("tmp_{user}", "tmp_alice", "bob", False),
    ("{user}-home-*", "bob-home-inbox", "bob", True),
    ("{user}-home-*", "alice-home-inbox", "bob", False),
    ("{user}.{user}", "bob.{user}", "bob", True),  # substituted once, leftmost
    ("{user}.{user}", "bob.bob", "bob", False),
    ("a*b", "a*b", "u", True),  # '*' only counts when it is last
    ("a*b", "axxb", "u", False),
    ("tmp_{user}, temp*, {user}-home-*", "temp1", "carol", True),
])
def test_sources_and_targets(rules: str, address: str, user: str, allowed: bool) -> None:
    assert address_allowed(parse_addresses(rules, "sources"), address, user) is allowed


@pytest.mark.parametrize("pattern, address, allowed", [
    ("a.*.c", "a.b.c", True),
    ("a.*.c", "a.b.b.c", False),
    ("a.#", "a", True),
    ("a.#", "a.b.c", True),
    ("#.c", "x.y.c", True),
    ("a/{user}/#", "a/bob/x", True),
    ("a/{user}/#", "a/eve/x", False),
])
def test_address_patterns(pattern: str, address: str, allowed: bool) -> None:
    assert AddressPattern(pattern).matches(address, "bob") is allowed


@pytest.mark.parametrize("rules, address, user, allowed", [
    # qdrouterd 1.19's token: prefix, embedded and suffix, substituted literally.
    ("tmp_${user}", "tmp_bob", "bob", True),
    ("tmp_${user}", "tmp_eve", "bob", False),
    ("${user}-home-*", "bob-home-inbox", "bob", True),
    ("${user}-home-*", "eve-home-inbox", "bob", False),
    ("a.${user}.b", "a.bob.b", "bob", True),
    ("${user}*", "bobby", "bob", True),
    ("q.${user}", "q.*", "*", True),  # a user named '*' gets only the literal address
    ("q.${user}", "q.x", "*", False),
    ("*", "", "bob", False),  # qdrouterd: a blank address matches nothing, not even '*'
])
def test_sources_and_targets_with_the_c_routers_user_token(rules: str, address: str, user: str,
                                                            allowed: bool) -> None:
    assert address_allowed(parse_addresses(rules, "targets"), address, user) is allowed


@pytest.mark.parametrize("pattern, address, user, allowed", [
    ("${user}.#", "bob.x.y", "bob", True),
    ("${user}.#", "bob", "bob", True),
    ("${user}.#", "bobby.x", "bob", False),  # the name must be a whole token
    ("${user}.#", "eve.x", "bob", False),
    ("${user}/*", "bob.smith/inbox", "bob.smith", True),  # names with separators
    ("${user}/*", "bob.smith/inbox", "bob", False),
    ("#/${user}", "a/b/bob", "bob", True),
    ("#/${user}", "a/b/xbob", "bob", False),
    ("${user}.x", "#.x", "#", True),  # a user named '#' is a literal name, not a wildcard
    ("${user}.x", "a.b.x", "#", False),
    ("a/{user}/#", "a/#/x", "#", True),  # the book's token too
    ("a/{user}/#", "a/b/c/x", "#", False),
])
def test_patterns_with_a_user_token(pattern: str, address: str, user: str, allowed: bool) -> None:
    assert AddressPattern(pattern).matches(address, user) is allowed


@pytest.mark.parametrize("field, value, message", [
    ("targets", "a.${user}.${user}", "more than one \\$\\{user\\} token"),
    ("targetPattern", "a.${user}.b", "may only begin or end a pattern"),
])
def test_user_tokens_qdrouterd_refuses(field: str, value: str, message: str) -> None:
    parse = parse_patterns if field.endswith("Pattern") else parse_addresses
    with pytest.raises(PolicyError, match=f"{field}: .*{message}"):
        parse(value, field)
