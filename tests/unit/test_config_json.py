"""The JSON config form: [["section", {attributes}], ...]."""

from __future__ import annotations

import pytest

from qdrouter.config import ConfigError, parse_config_text

JSON_CONFIG = """\
# comment lines are tolerated
[
    ["router", {"mode": "interior", "id": "J1"}],
    ["listener", {"host": "0.0.0.0", "port": 5672, "authenticatePeer": false,
                  "sasl-mechanisms": "ANONYMOUS"}],
    ["linkRoute", {"prefix": "b2", "dir": "in", "connection": "broker"}],
    ["vhost", {"hostname": "example.com",
               "groups": {"admin": {"users": "alice", "maxSessions": 3}}}]
]
"""


def test_json_config_parses_like_conf() -> None:
    entities = parse_config_text(JSON_CONFIG, "c.json")
    assert [e.section for e in entities] == ["router", "listener", "linkRoute", "vhost"]
    listener = entities[1]
    assert listener.attributes["port"] == "5672"  # a JSON number means the same port text
    assert listener.attributes["authenticatePeer"] is False
    assert listener.attributes["saslMechanisms"] == "ANONYMOUS"
    assert listener.attributes["role"] == "normal"  # defaults filled as for conf
    assert entities[2].attributes["direction"] == "in"
    assert entities[2].warnings == ["c.json:6: linkRoute: attribute 'dir' is deprecated, use 'direction'"]
    groups = entities[3].attributes["groups"]
    assert groups["admin"]["maxSessions"] == 3  # type: ignore[index]


def test_json_entity_lines() -> None:
    entities = parse_config_text(JSON_CONFIG, "c.json")
    assert [e.source for e in entities] == ["c.json:3", "c.json:4", "c.json:6", "c.json:7"]


def test_json_attribute_error_points_at_attribute_line() -> None:
    text = '[\n  ["router", {}],\n  ["listener", {"port": "1",\n     "prot": 2}]\n]\n'
    with pytest.raises(ConfigError) as info:
        parse_config_text(text, "c.json")
    assert str(info.value) == "c.json:4: listener: unknown attribute 'prot' (did you mean 'port'?)"


def test_invalid_json() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_text('[\n  ["router", {}]\n  ["listener", {}]\n]', "c.json")
    assert str(info.value) == "c.json:3: invalid JSON: Expecting ',' delimiter"


@pytest.mark.parametrize("entry", ['["router"]', '{"router": {}}', '["router", []]', '[1, {}]'])
def test_wrongly_shaped_entries(entry: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_text(f"[\n{entry}\n]", "c.json")
    assert str(info.value).startswith('c.json:2: each entry must be ["section", {attributes}]')


def test_json_booleans_are_not_integers() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_text('[["router", {}], ["listener", {"maxFrameSize": true}]]', "c.json")
    assert str(info.value) == "c.json:1: listener: attribute 'maxFrameSize': True is not an integer"


def test_json_object_is_not_the_json_form() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_text('# a comment\n{"router": {"mode": "standalone"}}\n', "c.json")
    assert str(info.value) == ('c.json:2: a JSON config must be a list of entries, '
                               '[["section", {attributes}], ...], not a JSON object')
