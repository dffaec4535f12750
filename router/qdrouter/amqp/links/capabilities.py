"""Reading and setting the capabilities of link termini (e.g. qd.router, qd.router-data)."""

from __future__ import annotations

from typing import Any, List

from ..bindings.proton_ffi import ffi, lib

CONTROL_CAPABILITY = "qd.router"
DATA_CAPABILITY = "qd.router-data"


def _symbol(data: Any) -> str:
    value = lib.pn_data_get_symbol(data)
    return bytes(ffi.buffer(value.start, value.size)).decode("ascii", "replace")


def capabilities(terminus: Any) -> List[str]:
    """The capability symbols of a terminus (a single symbol or an array of them)."""
    data = lib.pn_terminus_capabilities(terminus)
    found: List[str] = []
    lib.pn_data_rewind(data)
    while lib.pn_data_next(data):
        kind = lib.pn_data_type(data)
        if kind == lib.PN_SYMBOL:
            found.append(_symbol(data))
        elif kind == lib.PN_ARRAY and lib.pn_data_get_array_type(data) == lib.PN_SYMBOL:
            lib.pn_data_enter(data)
            while lib.pn_data_next(data):
                found.append(_symbol(data))
            lib.pn_data_exit(data)
    lib.pn_data_rewind(data)
    return found


def set_capability(terminus: Any, capability: str) -> None:
    data = lib.pn_terminus_capabilities(terminus)
    encoded = capability.encode("ascii")
    buffer = ffi.new("char[]", encoded)
    lib.pn_data_put_symbol(data, ffi.new("pn_bytes_t *", (len(encoded), buffer))[0])


def dynamic_node_address(terminus: Any) -> str | None:
    """``x-opt-qd.address`` from a dynamic terminus's dynamic-node-properties: the address
    a dynamic source is link-routed by (upstream qdrouterd)."""
    if not lib.pn_terminus_is_dynamic(terminus):
        return None
    data = lib.pn_terminus_properties(terminus)
    lib.pn_data_rewind(data)
    found: str | None = None
    if lib.pn_data_next(data) and lib.pn_data_type(data) == lib.PN_MAP:
        lib.pn_data_enter(data)
        while lib.pn_data_next(data):
            key = _symbol(data) if lib.pn_data_type(data) == lib.PN_SYMBOL else None
            if not lib.pn_data_next(data):
                break
            if key == "x-opt-qd.address" and lib.pn_data_type(data) == lib.PN_STRING:
                value = lib.pn_data_get_string(data)
                found = bytes(ffi.buffer(value.start, value.size)).decode("utf-8", "replace")
        lib.pn_data_exit(data)
    lib.pn_data_rewind(data)
    return found
