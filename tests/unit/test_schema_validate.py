"""Validation shared by config and management: coercion, required, defaults, rules."""

from __future__ import annotations

import pytest

from qdrouter.schema import (
    CREATE,
    UPDATE,
    InvalidValue,
    SchemaError,
    check_entity,
    coerce_value,
    entity_type,
    validate_attributes,
)
from qdrouter.schema.types import AttributeDef


@pytest.mark.parametrize("text,expected", [
    ("yes", True), ("No", False), ("TRUE", True), ("false", False), ("1", True), ("0", False),
    (True, True), (0, False),
])
def test_boolean_coercion(text: object, expected: bool) -> None:
    assert coerce_value(AttributeDef("b", "boolean"), text) is expected


@pytest.mark.parametrize("bad", ["maybe", "", 2, "y"])
def test_boolean_rejects(bad: object) -> None:
    with pytest.raises(InvalidValue, match="is not a boolean"):
        coerce_value(AttributeDef("b", "boolean"), bad)


def test_integer_coercion() -> None:
    attr = AttributeDef("i", "integer")
    assert coerce_value(attr, " 42 ") == 42
    assert coerce_value(attr, -3) == -3
    assert coerce_value(attr, 7.0) == 7
    for bad in ("4x", True, 1.5, "", None):
        with pytest.raises(InvalidValue, match="is not an integer"):
            coerce_value(attr, bad)


def test_string_enum_map_list_coercion() -> None:
    assert coerce_value(AttributeDef("s", "string"), 5672) == "5672"
    with pytest.raises(InvalidValue):
        coerce_value(AttributeDef("s", "string"), True)
    enum = AttributeDef("e", "enum", choices=("in", "out"))
    assert coerce_value(enum, "in") == "in"
    with pytest.raises(InvalidValue) as info:
        coerce_value(enum, "IN")
    assert str(info.value) == "'IN' is not one of in, out"
    assert coerce_value(AttributeDef("m", "map"), '{"a": 1}') == {"a": 1}
    with pytest.raises(InvalidValue, match="is not a map"):
        coerce_value(AttributeDef("m", "map"), "[1]")
    assert coerce_value(AttributeDef("l", "list"), (1, 2)) == [1, 2]
    with pytest.raises(InvalidValue, match="property keys must be strings"):
        coerce_value(AttributeDef("p", "properties"), {1: "x"})


def test_create_fills_defaults_and_keeps_schema_order() -> None:
    out = validate_attributes(entity_type("listener"), {"port": 5672, "host": "::"})
    assert out.ok, out.problems
    assert out.attributes["port"] == "5672"
    assert out.attributes["role"] == "normal"
    assert out.attributes["idleTimeoutSeconds"] == 16
    assert list(out.attributes)[:2] == ["host", "port"]
    assert "saslMechanisms" not in out.attributes  # no default, not given


def test_create_problems_name_the_attribute() -> None:
    out = validate_attributes(entity_type("listener"),
                              [("prot", "1"), ("role", "boss"), ("maxFrameSize", "big")])
    messages = [p.message for p in out.problems]
    assert messages == [
        "unknown attribute 'prot' (did you mean 'port'?)",
        "attribute 'role': 'boss' is not one of normal, inter-router, route-container, edge",
        "attribute 'maxFrameSize': 'big' is not an integer",
    ]
    assert [p.index for p in out.problems] == [0, 1, 2]
    assert [p.attribute for p in out.problems] == ["prot", "role", "maxFrameSize"]


def test_missing_required_and_read_only() -> None:
    out = validate_attributes(entity_type("autoLink"), {"operStatus": "active", "dir": "in"})
    messages = [p.message for p in out.problems]
    assert "attribute 'operStatus' is read-only" in messages
    assert "missing required attribute 'address'" in messages
    assert [w.message for w in out.warnings] == ["attribute 'dir' is deprecated, use 'direction'"]


def test_same_attribute_twice_under_two_spellings() -> None:
    out = validate_attributes(entity_type("autoLink"),
                              [("address", "q"), ("dir", "in"), ("direction", "out")])
    assert [p.message for p in out.problems] == [
        "attribute 'direction' is given more than once (also as 'dir')"]


def test_type_attribute_must_match() -> None:
    ok = validate_attributes(entity_type("listener"), {"type": "org.apache.qpid.dispatch.listener"})
    assert ok.ok and "type" not in ok.attributes
    bad = validate_attributes(entity_type("listener"), {"type": "connector"})
    assert "does not match the entity type" in bad.problems[0].message


def test_update_mode_only_updatable_attributes_and_no_defaults() -> None:
    log = entity_type("log")
    out = validate_attributes(log, {"enable": "debug+"}, mode=UPDATE)
    assert out.ok and out.attributes == {"enable": "debug+"}
    listener = validate_attributes(entity_type("listener"), {"port": "1"}, mode=UPDATE)
    assert listener.problems[0].message == "attribute 'port' cannot be changed by update"
    with pytest.raises(SchemaError):
        validate_attributes(log, {}, mode="delete")


def test_cross_attribute_rules() -> None:
    address = entity_type("address")
    both = validate_attributes(address, {"prefix": "a", "pattern": "b/#"})
    assert both.problems[0].message == "give either 'prefix' or 'pattern', not both"
    neither = validate_attributes(address, {"distribution": "closest"})
    assert neither.problems[0].message == "one of 'prefix' or 'pattern' is required"
    link_route = validate_attributes(entity_type("linkRoute"), {
        "prefix": "b2", "direction": "in", "containerId": "c", "connection": "broker"})
    assert "'containerId' or 'connection', not both" in link_route.problems[0].message
    assert check_entity(address, {"prefix": "a"}) == []


def test_router_id_and_port_and_log_rules() -> None:
    rid = validate_attributes(entity_type("router"), {"id": "two words"})
    assert "is not a valid router id" in rid.problems[0].message
    for bad in ("70000", "-5", "56 72"):
        port = validate_attributes(entity_type("listener"), {"port": bad})
        assert port.problems[0].message == (
            f"attribute 'port': {bad!r} is not a port number (0 to 65535) or service name")
    assert validate_attributes(entity_type("listener"), {"port": "amqps"}).ok
    assert validate_attributes(entity_type("connector"), {"port": 0}).ok
    cost = validate_attributes(entity_type("connector"), {"cost": 0})
    assert "at least 1" in cost.problems[0].message
    levels = validate_attributes(entity_type("log"), {"module": "DEFAULT", "enable": "info+,lots"})
    assert "'lots' is not a log level" in levels.problems[0].message
    assert validate_attributes(entity_type("log"), {"module": "ROUTER", "enable": "trace+"}).ok
    assert validate_attributes(entity_type("log"), {"module": "ROUTER", "enable": "none"}).ok


def test_vhost_groups_are_checked_and_defaulted() -> None:
    vhost = entity_type("vhost")
    out = validate_attributes(vhost, {"name": "$default", "groups": {
        "admin": {"users": "alice", "max-sessions": "2", "allowDynamicSource": "yes"}}})
    assert out.ok, out.problems
    assert out.attributes["hostname"] == "$default"  # taken from name
    admin = out.attributes["groups"]["admin"]  # type: ignore[index]
    assert admin["maxSessions"] == 2
    assert admin["allowDynamicSource"] is True
    assert admin["maxSenders"] == 2147483647
    bad = validate_attributes(vhost, {"hostname": "h", "groups": {"g": {"maxSesions": 1}, "h": 3}},
                              mode=CREATE)
    assert [p.message for p in bad.problems] == [
        "attribute 'groups': group 'g': unknown attribute 'maxSesions' (did you mean 'maxSessions'?)",
        "attribute 'groups': group 'h': expected a map of settings, not 3",
    ]
    assert bad.problems[0].path == ("g", "maxSesions")
