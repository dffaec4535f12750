"""Reading and setting the capabilities of link termini (e.g. qd.router, qd.router-data)."""

from __future__ import annotations

from typing import Any, List

from .proton_ffi import ffi, lib

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
