"""Defaults: filled-in attribute values, generated router ids, the packaged default config."""

from __future__ import annotations

import re

import pytest

from qdrouter.config import (
    DEFAULT_CONFIG_TEXT,
    default_config,
    generate_router_id,
    parse_config_text,
    port_number,
)


def test_listener_and_router_defaults() -> None:
    router, listener, address = parse_config_text(
        "router {\n}\nlistener {\n}\naddress {\n  prefix: x\n}\n", "d.conf")
    assert router.attributes["mode"] == "standalone"
    assert router.attributes["helloIntervalSeconds"] == 1
    assert router.attributes["raIntervalSeconds"] == 30
    assert router.attributes["defaultDistribution"] == "balanced"
    assert listener.attributes["host"] == ""
    assert listener.attributes["port"] == "amqp"
    assert listener.attributes["role"] == "normal"
    assert listener.attributes["stripAnnotations"] == "both"
    assert listener.attributes["idleTimeoutSeconds"] == 16
    assert listener.attributes["maxFrameSize"] == 16384
    assert listener.attributes["authenticatePeer"] is False
    assert address.attributes["distribution"] == "balanced"
    assert "name" not in listener.attributes  # no default name
    assert "operStatus" not in address.attributes  # read-only, never filled


def test_router_id_generated_when_absent() -> None:
    [first] = parse_config_text("router {\n  mode: interior\n}\n", "a")
    [second] = parse_config_text("router {\n  mode: interior\n}\n", "a")
    assert re.fullmatch(r"Router\.\S+\.[0-9a-f]{6}", str(first.attributes["id"]))
    assert first.attributes["id"] != second.attributes["id"]
    assert next(iter(first.attributes)) == "id"
    assert re.fullmatch(r"Router\.\S+\.[0-9a-f]{6}", generate_router_id())


def test_explicit_router_id_kept() -> None:
    [router] = parse_config_text("router {\n  id: Mine\n}\n", "a")
    assert router.attributes["id"] == "Mine"


def test_default_config() -> None:
    entities = default_config()
    assert [e.section for e in entities] == ["router"] + ["listener"] + ["address"] * 5
    assert entities[0].attributes["mode"] == "standalone"
    listener = entities[1].attributes
    assert (listener["host"], listener["port"], listener["saslMechanisms"]) == (
        "127.0.0.1", "5672", "ANONYMOUS")
    addresses = {e.attributes["prefix"]: e.attributes["distribution"] for e in entities[2:]}
    assert addresses == {"closest": "closest", "multicast": "multicast", "unicast": "closest",
                         "exclusive": "closest", "broadcast": "multicast"}
    assert "listener {" in DEFAULT_CONFIG_TEXT


@pytest.mark.parametrize("text,number", [("amqp", 5672), ("amqps", 5671), ("0", 0), (" 6000 ", 6000)])
def test_port_number(text: str, number: int) -> None:
    assert port_number(text) == number


@pytest.mark.parametrize("text", ["70000", "not-a-service-name", "-1"])
def test_port_number_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        port_number(text)
