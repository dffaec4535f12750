"""The address an attaching client's link gets, as qdrouterd gives it: a mobile address of its
own for a dynamic target, and no node at all on an address whose distribution is unavailable."""

from __future__ import annotations

import uuid
from typing import Any

from ...core.address_table import UNAVAILABLE, AddressTable
from ..bindings.proton_ffi import lib, terminus_key


def producer_address(pn_link: Any) -> str | None:
    """The key a producer's link sends to (None: anonymous). A dynamic target gets a mobile
    address of its own, ``amqp:/_$temp.<id>``, that receivers anywhere may attach to
    (qdrouterd's address_lookup_client.c, qdr_generate_mobile_addr); the attach answers it."""
    remote_target = lib.pn_link_remote_target(pn_link)
    if lib.pn_terminus_is_dynamic(remote_target):
        address = f"amqp:/_$temp.{uuid.uuid4().hex[:16]}"
        lib.pn_terminus_set_address(lib.pn_link_target(pn_link), address.encode())
        return terminus_key(lib.pn_link_target(pn_link))
    return terminus_key(remote_target)


def unavailable(table: AddressTable, key: str) -> bool:
    """Whether ``key``'s distribution is unavailable (its entity's, or the router's default):
    qdrouterd has no node to attach to there."""
    address = table.find(key)
    if address is not None:
        return address.distribution is UNAVAILABLE and address.handler is None
    return table.distribution_for(key) is UNAVAILABLE
