"""The qdrouterd.conf syntax: sections, values, comments, quoting, nested maps."""

from __future__ import annotations

from pathlib import Path

from qdrouter.config import ConfigEntity, load_config, parse_config_text

ROUTER = "router {\n    id: R1\n}\n"


def parse(text: str) -> list[ConfigEntity]:
    return parse_config_text(ROUTER + text, "test.conf")


def only(text: str, section: str) -> ConfigEntity:
    found = [e for e in parse(text) if e.section == section]
    assert len(found) == 1
    return found[0]


def test_sections_in_order_with_sources() -> None:
    entities = parse_config_text(
        "router {\n  mode: interior\n  id: A\n}\n\nlistener {\n  port: 5672\n}\n"
        "connector {\n  host: peer\n}\n", "/etc/qd.conf")
    assert [e.section for e in entities] == ["router", "listener", "connector"]
    assert [e.source for e in entities] == ["/etc/qd.conf:1", "/etc/qd.conf:6", "/etc/qd.conf:9"]
    assert entities[0].type.long_name == "org.apache.qpid.dispatch.router"


def test_brace_on_next_line_and_comments() -> None:
    entities = parse_config_text(
        "# whole-line comment\n"
        "router\n"
        "{\n"
        "    mode: interior   # trailing comment\n"
        "    id: R#1          # '#' inside a word is not a comment\n"
        "}\n"
        "\n"
        "   # indented comment\n"
        "listener   # comment between name and brace\n"
        "\n"
        "{\n"
        "    port: 5673\n"
        "}\n", "x.conf")
    assert entities[0].attributes["mode"] == "interior"
    assert entities[0].attributes["id"] == "R#1"
    assert entities[1].attributes["port"] == "5673"
    assert entities[1].source == "x.conf:9"


def test_values_with_spaces_and_quotes() -> None:
    listener = only(
        "listener {\n"
        "    saslMechanisms: ANONYMOUS PLAIN\n"
        "    host: \"127.0.0.1\"\n"
        "    failoverUrls: 'amqp://a:5672, amqp://b:5672'  # comment\n"
        "    policyVhost: \"has # hash\"\n"
        "}\n", "listener")
    assert listener.attributes["saslMechanisms"] == "ANONYMOUS PLAIN"
    assert listener.attributes["host"] == "127.0.0.1"
    assert listener.attributes["failoverUrls"] == "amqp://a:5672, amqp://b:5672"
    assert listener.attributes["policyVhost"] == "has # hash"


def test_empty_quoted_string() -> None:
    assert only('listener {\n    host: ""\n}\n', "listener").attributes["host"] == ""


def test_values_are_coerced() -> None:
    listener = only(
        "listener {\n    idleTimeoutSeconds: 30\n    authenticatePeer: YES\n"
        "    requireSsl: 0\n    role: inter-router\n}\n", "listener")
    assert listener.attributes["idleTimeoutSeconds"] == 30
    assert listener.attributes["authenticatePeer"] is True
    assert listener.attributes["requireSsl"] is False
    assert listener.attributes["role"] == "inter-router"


def test_hyphenated_names() -> None:
    listener = only(
        "listener {\n    sasl-mechanisms: PLAIN\n    idle-timeout-seconds: 5\n"
        "    max-frame-size: 1024\n}\n", "listener")
    assert listener.attributes["saslMechanisms"] == "PLAIN"
    assert listener.attributes["idleTimeoutSeconds"] == 5
    assert listener.attributes["maxFrameSize"] == 1024
    assert listener.warnings == []
    assert only("ssl-profile {\n    cert-file: /c.pem\n}\n", "sslProfile").attributes == {
        "certFile": "/c.pem"}


def test_deprecated_names_are_accepted_with_a_warning() -> None:
    auto = only("autoLink {\n    addr: queue.first\n    dir: in\n    connection: broker\n}\n",
                "autoLink")
    assert auto.attributes["address"] == "queue.first"
    assert auto.attributes["direction"] == "in"
    assert auto.warnings == [
        "test.conf:5: autoLink: attribute 'addr' is deprecated, use 'address'",
        "test.conf:6: autoLink: attribute 'dir' is deprecated, use 'direction'",
    ]
    router = parse_config_text("router {\n    routerId: Old\n    helloInterval: 2\n}\n", "r.conf")[0]
    assert router.attributes["id"] == "Old"
    assert router.attributes["helloIntervalSeconds"] == 2


def test_patterns_may_start_with_hash() -> None:
    routes = [e for e in parse(
        "linkRoute {\n    pattern: #\n    direction: in\n}\n"
        "linkRoute {\n    pattern: b2/#   # trailing comment\n    direction: out\n}\n"
        "address {\n    pattern: */queue/#\n}\n") if e.section in ("linkRoute", "address")]
    assert [e.attributes["pattern"] for e in routes] == ["#", "b2/#", "*/queue/#"]


def test_one_line_sections() -> None:
    entities = parse_config_text("router { mode: interior, id: R1 }\n"
                                 "address { prefix: closest, distribution: closest }\n"
                                 "address { prefix: a, b }\n", "one.conf")
    assert entities[0].attributes["mode"] == "interior"
    assert entities[0].attributes["id"] == "R1"
    assert entities[1].attributes["prefix"] == "closest"
    assert entities[1].attributes["distribution"] == "closest"
    assert entities[2].attributes["prefix"] == "a, b"  # no "key:" after the comma


def test_nested_maps_in_conf_syntax() -> None:
    vhost = only(
        "vhost {\n"
        "    hostname: example.com\n"
        "    groups: {\n"
        "        admin: { users: alice, bob, remoteHosts: 127.0.0.1, ::1 }\n"
        "        $default:\n"
        "        {\n"
        "            remoteHosts: *,\n"
        "            sources: tmp_{user}, temp*, {user}-home-*\n"
        "        },\n"
        "    }\n"
        "}\n", "vhost")
    groups = vhost.attributes["groups"]
    assert isinstance(groups, dict)
    assert groups["admin"]["users"] == "alice, bob"
    assert groups["admin"]["remoteHosts"] == "127.0.0.1, ::1"
    assert groups["$default"]["remoteHosts"] == "*"
    assert groups["$default"]["sources"] == "tmp_{user}, temp*, {user}-home-*"


def test_json_values_keep_their_types() -> None:
    listener = only('listener {\n    openProperties: {"n": 1, "flags": [true, null], "s": "x"}\n}\n',
                    "listener")
    assert listener.attributes["openProperties"] == {"n": 1, "flags": [True, None], "s": "x"}
    vhost = only('vhost {\n  hostname: h\n  groups: {"g": {"users": "u", "maxSessions": 4}}\n}\n',
                 "vhost")
    assert vhost.attributes["groups"]["g"]["maxSessions"] == 4  # type: ignore[index]


def test_multi_line_json_map_value() -> None:
    vhost = only('vhost {\n  hostname: h\n  groups: {\n    "g": {\n      "users": "u"\n    }\n  }\n}\n',
                 "vhost")
    assert vhost.attributes["groups"]["g"]["users"] == "u"  # type: ignore[index]


def test_crlf_line_endings() -> None:
    entities = parse_config_text("router {\r\n    mode: interior\r\n    id: W\r\n}\r\n", "w.conf")
    assert entities[0].attributes["mode"] == "interior"
    assert entities[0].attributes["id"] == "W"


def test_load_config_reads_file(tmp_path: Path) -> None:
    path = tmp_path / "qdrouterd.conf"
    path.write_text(ROUTER + "listener {\n    port: 6000\n}\n")
    entities = load_config(str(path))
    assert entities[1].attributes["port"] == "6000"
    assert entities[1].source == f"{path}:4"


def test_all_config_sections_parse() -> None:
    entities = parse(
        "listener {\n  port: 1\n}\nconnector {\n  port: 2\n}\nlog {\n  module: DEFAULT\n"
        "  enable: info+\n}\nsslProfile {\n  name: tls\n  certFile: /c\n}\naddress {\n  prefix: a\n}\n"
        "linkRoute {\n  prefix: b\n  direction: in\n}\nautoLink {\n  address: c\n  direction: out\n}\n"
        "policy {\n  maxConnections: 9\n}\nvhost {\n  hostname: v\n}\n"
        "exchange {\n  address: e\n}\nbinding {\n  exchangeName: e\n  nextHopAddress: n\n}\n")
    assert [e.section for e in entities] == [
        "router", "listener", "connector", "log", "sslProfile", "address", "linkRoute", "autoLink",
        "policy", "vhost", "exchange", "binding"]
