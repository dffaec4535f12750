"""Config errors: each kind, and that messages name file, line, entity and attribute."""

from __future__ import annotations

from pathlib import Path

import pytest

from qdrouter.config import ConfigError, load_config, parse_config_text

ROUTER = "router {\n    id: R1\n}\n"  # lines 1-3


def errors(text: str, source: str = "/etc/x.conf") -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config_text(text, source)
    lines = str(info.value).split("\n")
    assert lines == [str(p) for p in info.value.problems]
    return lines


def test_unknown_attribute_with_suggestion() -> None:
    assert errors(ROUTER + "\n\n\nlistener {\n    prot: 5672\n}\n") == [
        "/etc/x.conf:8: listener: unknown attribute 'prot' (did you mean 'port'?)"]


def test_unknown_attribute_without_suggestion() -> None:
    assert errors(ROUTER + "listener {\n    zzzzzz: 1\n}\n") == [
        "/etc/x.conf:5: listener: unknown attribute 'zzzzzz'"]


def test_enum_value_not_in_choices() -> None:
    assert errors("address {\n    prefix: a\n    distribution: fastest\n}\n" + ROUTER) == [
        "/etc/x.conf:3: address: attribute 'distribution': 'fastest' is not one of multicast, "
        "closest, balanced, unavailable"]


def test_bad_integer_and_boolean() -> None:
    assert errors(ROUTER + "listener {\n    idle-timeout-seconds: soon\n    requireSsl: perhaps\n}\n") == [
        "/etc/x.conf:5: listener: attribute 'idle-timeout-seconds': 'soon' is not an integer",
        "/etc/x.conf:6: listener: attribute 'requireSsl': 'perhaps' is not a boolean "
        "(use yes, no, true, false, 1 or 0)",
    ]


def test_missing_required_attribute_points_at_section() -> None:
    assert errors(ROUTER + "autoLink {\n    address: q\n}\n") == [
        "/etc/x.conf:4: autoLink: missing required attribute 'direction'"]


def test_read_only_attribute() -> None:
    assert errors(ROUTER + "linkRoute {\n  prefix: a\n  direction: in\n  operStatus: active\n}\n") == [
        "/etc/x.conf:7: linkRoute: attribute 'operStatus' is read-only"]


def test_attribute_given_twice() -> None:
    assert errors(ROUTER + "listener {\n    port: 1\n    host: h\n    port: 2\n}\n") == [
        "/etc/x.conf:7: listener: attribute 'port' is given more than once"]
    assert errors(ROUTER + "autoLink {\n  addr: q\n  address: r\n  direction: in\n}\n") == [
        "/etc/x.conf:6: autoLink: attribute 'address' is given more than once (also as 'addr')"]


def test_singletons() -> None:
    assert errors(ROUTER + "policy {\n}\n" + "router {\n    id: R2\n}\npolicy {\n}\n") == [
        "/etc/x.conf:6: router: only one 'router' section is allowed (the first is at line 1)",
        "/etc/x.conf:9: policy: only one 'policy' section is allowed (the first is at line 4)",
    ]


def test_unknown_section_and_non_config_types() -> None:
    assert errors(ROUTER + "listner {\n}\nconnection {\n}\n") == [
        "/etc/x.conf:4: unknown section 'listner' (did you mean 'listener'?)",
        "/etc/x.conf:6: 'connection' cannot be configured in a config file",
    ]


@pytest.mark.parametrize("old,hint", [
    ("linkRoutePattern", "use 'linkRoute'"),
    ("fixedAddress", "use 'address'"),
    ("waypoint", "'autoLink'"),
])
def test_removed_sections_explain_the_replacement(old: str, hint: str) -> None:
    [message] = errors(ROUTER + f"{old} {{\n    prefix: a\n}}\n")
    assert message.startswith(f"/etc/x.conf:4: section '{old}' is no longer supported: ")
    assert hint in message


def test_missing_router_section() -> None:
    assert errors("listener {\n    port: 1\n}\n") == [
        "/etc/x.conf: no 'router' section: a config needs exactly one"]


def test_duplicate_names() -> None:
    assert errors(ROUTER + "connector {\n  name: b\n}\nlistener {\n  name: b\n}\n") == [
        "/etc/x.conf:7: listener: name 'b' is already used by the connector at line 4"]


def test_references_to_missing_sections() -> None:
    text = ROUTER + ("listener {\n  ssl-profile: tls\n}\nauthServicePlugin {\n  name: auth\n"
                     "  sslProfile: gone\n}\n"
                     "connector {\n  sslProfile: ok\n}\nsslProfile {\n  name: ok\n}\n")
    assert errors(text) == [
        "/etc/x.conf:5: listener: attribute 'ssl-profile': there is no sslProfile named 'tls'",
        "/etc/x.conf:9: authServicePlugin: attribute 'sslProfile': there is no sslProfile named 'gone'",
    ]


def test_a_listener_sasl_plugin_is_not_supported() -> None:
    text = ROUTER + "authServicePlugin {\n  name: auth\n}\nlistener {\n  saslPlugin: auth\n}\n"
    assert errors(text) == ["/etc/x.conf:8: listener: attribute 'saslPlugin': authentication by an "
                            "authServicePlugin is not supported by qdmesh"]


def test_cross_attribute_rule_points_at_attribute() -> None:
    assert errors(ROUTER + "address {\n    prefix: a\n    pattern: a/#\n}\n") == [
        "/etc/x.conf:6: address: give either 'prefix' or 'pattern', not both"]
    assert errors(ROUTER + "address {\n    distribution: closest\n}\n") == [
        "/etc/x.conf:4: address: one of 'prefix' or 'pattern' is required"]


def test_nested_group_error_points_at_its_line() -> None:
    text = ROUTER + ("vhost {\n  hostname: h\n  groups: {\n    admin: {\n      users: a\n"
                     "      maxFrameSise: 5\n    }\n  }\n}\n")
    assert errors(text) == [
        "/etc/x.conf:9: vhost: attribute 'groups': group 'admin': unknown attribute "
        "'maxFrameSise' (did you mean 'maxFrameSize'?)"]


def test_all_errors_are_collected_in_line_order() -> None:
    text = ("listener {\n    prot: 1\n}\n" + ROUTER +
            "address {\n    prefix: a\n    distribution: nope\n}\nautoLink {\n  dir: sideways\n}\n")
    assert errors(text) == [
        "/etc/x.conf:2: listener: unknown attribute 'prot' (did you mean 'port'?)",
        "/etc/x.conf:9: address: attribute 'distribution': 'nope' is not one of multicast, closest, "
        "balanced, unavailable",
        "/etc/x.conf:11: autoLink: missing required attribute 'address'",
        "/etc/x.conf:12: autoLink: attribute 'dir': 'sideways' is not one of in, out",
    ]


@pytest.mark.parametrize("text,expected", [
    ("router {\n    mode: interior\n", "/etc/x.conf:1: syntax error: section 'router' opened at "
                                      "line 1 is never closed with '}'"),
    ("router {\n    mode interior\n}\n", "/etc/x.conf:2: syntax error: expected ':' after 'mode', "
                                         "found 'i'"),
    ("router\n    mode: x\n", "/etc/x.conf:2: syntax error: expected '{' after section name "
                              "'router', found 'm'"),
    ("router {\n  id: A\nlistener {\n}\n", "/etc/x.conf:3: syntax error: section 'listener' starts "
                                           "inside section 'router' (opened at line 1); is a '}' "
                                           "missing?"),
    ("router {\n}\n}\n", "/etc/x.conf:3: syntax error: '}' without a section to close"),
    ("mode: standalone\nrouter {\n}\n", "/etc/x.conf:1: syntax error: 'mode' is outside any section "
                                         "(attributes belong inside 'section { ... }')"),
    ("router {\n  id:\n}\n", "/etc/x.conf:2: syntax error: 'id' has no value (write \"\" for an "
                             "empty string)"),
    ('router {\n  id: "A\n}\n', "/etc/x.conf:2: syntax error: unterminated or malformed "
                                '"quoted" string'),
    ("router {\n  id: 'A\n}\n", "/etc/x.conf:2: syntax error: unterminated 'quoted' string"),
    ('router {\n  id: "A" "B"\n}\n', "/etc/x.conf:2: syntax error: unexpected '\"' after the value "
                                     "of 'id'"),
    ("router {}\nvhost {\n  hostname: h\n  groups: {\n    g: {}\n    g: {}\n  }\n}\n",
     "/etc/x.conf:6: syntax error: key 'g' appears twice in the same map"),
])
def test_syntax_errors(text: str, expected: str) -> None:
    assert errors(text) == [expected]


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.conf"
    with pytest.raises(ConfigError) as info:
        load_config(str(missing))
    assert str(info.value) == f"{missing}: cannot read config file: No such file or directory"


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bin.conf"
    path.write_bytes(b"router {\n  id: \xff\n}\n")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_config(str(path))
