"""The one door to proton-C: the cffi binding, its event constants, and small helpers.

The router's data path calls proton-C directly through ``cproton_ffi.lib``; proton's Python
wrapper classes cost microseconds per object and stay out of the router (see
docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from cproton_ffi import ffi, lib

from ...core.address_view import hash_view

__all__ = ["NULL", "c_string", "ffi", "lib", "terminus_address", "terminus_key"]

NULL: Any = ffi.NULL

# Event types, as plain ints so dispatch is an int comparison.
CONNECTION_INIT: int = lib.PN_CONNECTION_INIT
CONNECTION_REMOTE_OPEN: int = lib.PN_CONNECTION_REMOTE_OPEN
CONNECTION_REMOTE_CLOSE: int = lib.PN_CONNECTION_REMOTE_CLOSE
SESSION_REMOTE_OPEN: int = lib.PN_SESSION_REMOTE_OPEN
SESSION_REMOTE_CLOSE: int = lib.PN_SESSION_REMOTE_CLOSE
LINK_REMOTE_OPEN: int = lib.PN_LINK_REMOTE_OPEN
LINK_REMOTE_CLOSE: int = lib.PN_LINK_REMOTE_CLOSE
LINK_REMOTE_DETACH: int = lib.PN_LINK_REMOTE_DETACH
LINK_FLOW: int = lib.PN_LINK_FLOW
LINK_FINAL: int = lib.PN_LINK_FINAL
DELIVERY: int = lib.PN_DELIVERY
TRANSPORT: int = lib.PN_TRANSPORT
TRANSPORT_ERROR: int = lib.PN_TRANSPORT_ERROR
TRANSPORT_CLOSED: int = lib.PN_TRANSPORT_CLOSED
TRANSPORT_AUTHENTICATED: int = lib.PN_TRANSPORT_AUTHENTICATED

# Delivery outcomes.
ACCEPTED: int = lib.PN_ACCEPTED
REJECTED: int = lib.PN_REJECTED
RELEASED: int = lib.PN_RELEASED
MODIFIED: int = lib.PN_MODIFIED
RECEIVED: int = lib.PN_RECEIVED

LOCAL_UNINIT: int = lib.PN_LOCAL_UNINIT
LOCAL_ACTIVE: int = lib.PN_LOCAL_ACTIVE
LOCAL_CLOSED: int = lib.PN_LOCAL_CLOSED
EOS: int = lib.PN_EOS


def c_string(pointer: Any) -> str | None:
    """A C string from proton as str, or None for NULL."""
    if not pointer:
        return None
    return str(ffi.string(pointer).decode("utf-8", "replace"))


def normalize_address(address: str | None) -> str | None:
    """Addresses may carry qdrouterd's `amqp:/` scheme prefix; routing ignores it."""
    if address is not None and address.startswith("amqp:/"):
        return address[6:]
    return address


def terminus_address(terminus: Any) -> str | None:
    return normalize_address(c_string(lib.pn_terminus_get_address(terminus)))


def terminus_key(terminus: Any) -> str | None:
    """The terminus's address as the router keys it: qdrouterd's hash view of the address as
    the peer wrote it (core/address_view.py), so "/x", "x" and "amqp:/x" are one address."""
    address = c_string(lib.pn_terminus_get_address(terminus))
    return hash_view(address) if address is not None else None


def set_condition(condition: Any, name: str, description: str) -> None:
    lib.pn_condition_set_name(condition, name.encode())
    lib.pn_condition_set_description(condition, description.encode())
