"""The properties map of the open a listener's or connector's connections send: the
listener's failoverUrls as qdrouterd's failover-server-list, then the entity's openProperties
(keys as symbols, as qdrouterd sends them; server.c). Encoded once per listener or connector;
each connection's open copies the bytes."""

from __future__ import annotations

from typing import Any, Dict, Mapping

from ...schema.connection_rules import parse_failover_urls
from ..bindings.proton_ffi import ffi, lib
from ..codec import AmqpEncodeError, encode_value
from ..codec.values import Symbol

FAILOVER_LIST = Symbol("failover-server-list")


class OpenPropertiesError(ValueError):
    """Properties with a value AMQP cannot carry; the message names the attribute."""


def encode_open_properties(failover_urls: str | None,
                           user: Mapping[str, Any] | None) -> bytes | None:
    """The encoded properties map, or None when there is nothing to send."""
    properties: Dict[Symbol, Any] = {}
    if failover_urls:
        properties[FAILOVER_LIST] = [{Symbol(key): value for key, value in item.items()}
                                     for item in parse_failover_urls(failover_urls)]
    for key, value in (user or {}).items():
        properties[Symbol(key)] = value
    if not properties:
        return None
    try:
        return encode_value(properties)
    except AmqpEncodeError as error:
        raise OpenPropertiesError(f"attribute 'openProperties': {error}") from None


def put_open_properties(pn_connection: Any, encoded: bytes) -> None:
    """Give the connection's open the properties ``encoded`` holds."""
    data = lib.pn_connection_properties(pn_connection)
    lib.pn_data_clear(data)
    lib.pn_data_decode(data, ffi.from_buffer(encoded), len(encoded))
