"""The schema's entity types: names, lookups, attribute definitions."""

from __future__ import annotations

import pytest

from qdrouter.schema import (
    ENTITY_TYPES,
    SchemaError,
    UnknownEntityType,
    camel_case,
    config_section_names,
    entity_type,
)
from qdrouter.schema.types import AttributeDef

CONFIG_TYPES = {
    "router": "org.apache.qpid.dispatch.router",
    "listener": "org.apache.qpid.dispatch.listener",
    "connector": "org.apache.qpid.dispatch.connector",
    "log": "org.apache.qpid.dispatch.log",
    "sslProfile": "org.apache.qpid.dispatch.sslProfile",
    "address": "org.apache.qpid.dispatch.router.config.address",
    "linkRoute": "org.apache.qpid.dispatch.router.config.linkRoute",
    "autoLink": "org.apache.qpid.dispatch.router.config.autoLink",
    "policy": "org.apache.qpid.dispatch.policy",
    "vhost": "org.apache.qpid.dispatch.vhost",
}

OPERATIONAL_TYPES = ["router.link", "router.address", "router.node", "connection", "management",
                     "vhostStats"]


@pytest.mark.parametrize("section,long_name", sorted(CONFIG_TYPES.items()))
def test_config_types_found_by_every_name(section: str, long_name: str) -> None:
    t = ENTITY_TYPES[long_name]
    assert t.config_section == section
    assert entity_type(section) is t
    assert entity_type(long_name) is t
    assert entity_type(t.short_name) is t


def test_router_config_short_names() -> None:
    assert entity_type("autoLink").short_name == "router.config.autoLink"
    assert entity_type("router.config.linkRoute").config_section == "linkRoute"
    assert entity_type("address").long_name == "org.apache.qpid.dispatch.router.config.address"


@pytest.mark.parametrize("short", OPERATIONAL_TYPES)
def test_operational_types_are_not_config_sections(short: str) -> None:
    t = entity_type(short)
    assert t.config_section is None
    assert t.long_name == f"org.apache.qpid.dispatch.{short}"
    assert "READ" in t.operations
    assert not any(a.create for a in t.attributes.values() if a.name not in ("name", "type"))


def test_hyphenated_section_names() -> None:
    assert entity_type("ssl-profile") is entity_type("sslProfile")
    assert entity_type("link-route") is entity_type("linkRoute")


def test_unknown_type_error_suggests() -> None:
    with pytest.raises(UnknownEntityType) as info:
        entity_type("listner")
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, SchemaError)
    assert str(info.value) == "unknown entity type 'listner' (did you mean 'listener'?)"


def test_every_type_has_base_attributes() -> None:
    for t in ENTITY_TYPES.values():
        assert list(t.attributes)[:3] == ["name", "identity", "type"], t.long_name
        assert t.attributes["type"].required
        assert not t.attributes["identity"].create


def test_singletons() -> None:
    singletons = {t.short_name for t in ENTITY_TYPES.values() if t.singleton}
    assert {"router", "policy", "management"} <= singletons
    assert "listener" not in singletons


def test_operations() -> None:
    assert entity_type("listener").operations == ("CREATE", "READ", "DELETE")
    assert entity_type("vhost").operations == ("CREATE", "READ", "UPDATE", "DELETE")
    assert entity_type("log").operations == ("READ", "UPDATE")
    assert entity_type("router").operations == ("READ",)
    assert "GET-SCHEMA" in entity_type("management").operations


def test_listener_attributes_and_defaults() -> None:
    attrs = entity_type("listener").attributes
    assert attrs["host"].default == ""
    assert attrs["port"].default == "amqp"
    assert attrs["role"].type == "enum"
    assert attrs["role"].choices == ("normal", "inter-router", "route-container", "edge")
    assert attrs["stripAnnotations"].default == "both"
    assert attrs["idleTimeoutSeconds"].default == 16
    assert attrs["maxFrameSize"].default == 16384
    assert attrs["saslMechanisms"].type == "string" and attrs["saslMechanisms"].create
    assert attrs["authenticatePeer"].type == "boolean" and attrs["authenticatePeer"].default is False


def test_router_attributes() -> None:
    attrs = entity_type("router").attributes
    assert attrs["mode"].default == "standalone"
    assert attrs["helloIntervalSeconds"].default == 1
    assert "helloInterval" in attrs["helloIntervalSeconds"].deprecated_names
    assert "routerId" in attrs["id"].deprecated_names
    assert not attrs["addrCount"].create


def test_enum_choices_of_routing_types() -> None:
    assert entity_type("address").attributes["distribution"].choices == (
        "multicast", "closest", "balanced", "unavailable")
    assert entity_type("address").attributes["distribution"].default == "balanced"
    direction = entity_type("autoLink").attributes["direction"]
    assert direction.required and direction.choices == ("in", "out")
    assert direction.deprecated_names == ("dir",)


def test_update_flags() -> None:
    assert entity_type("log").attributes["enable"].update
    assert entity_type("vhost").attributes["groups"].update
    assert entity_type("router.link").attributes["adminStatus"].update
    assert not entity_type("listener").attributes["port"].update


def test_resolve_attribute_spellings() -> None:
    listener = entity_type("listener")
    assert listener.resolve_attribute("saslMechanisms") is listener.attributes["saslMechanisms"]
    assert listener.resolve_attribute("sasl-mechanisms") is listener.attributes["saslMechanisms"]
    assert listener.resolve_attribute("idle-timeout-seconds") is listener.attributes["idleTimeoutSeconds"]
    auto = entity_type("autoLink")
    assert auto.resolve_attribute("addr") is auto.attributes["address"]
    assert auto.is_deprecated_spelling("addr")
    assert not auto.is_deprecated_spelling("address")
    assert listener.resolve_attribute("nonsense") is None
    assert listener.suggest_attribute("prot") == "port"


def test_camel_case() -> None:
    assert camel_case("sasl-mechanisms") == "saslMechanisms"
    assert camel_case("idle-timeout-seconds") == "idleTimeoutSeconds"
    assert camel_case("alreadyCamel") == "alreadyCamel"


def test_attribute_def_rejects_inconsistent_definitions() -> None:
    with pytest.raises(SchemaError):
        AttributeDef("x", "double")
    with pytest.raises(SchemaError):
        AttributeDef("x", "string", choices=("a",))
    with pytest.raises(SchemaError):
        AttributeDef("x", "enum")


def test_config_section_names_cover_qdrouterd_conf() -> None:
    names = config_section_names()
    for section in CONFIG_TYPES:
        assert section in names
    assert "vhostUserGroupSettings" not in names
    assert "router.link" not in names


def test_entity_types_are_hashable_and_immutable() -> None:
    t = entity_type("listener")
    assert hash(t) == hash(entity_type("listener"))
    with pytest.raises(TypeError):
        t.attributes["port"] = t.attributes["host"]  # type: ignore[index]
