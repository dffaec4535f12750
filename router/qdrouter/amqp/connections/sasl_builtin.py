"""Proton's built-in SASL for listeners that only offer ANONYMOUS, instead of Cyrus SASL.

python-qpid-proton builds proton with Cyrus SASL where its headers are installed, and then
every transport's SASL layer is Cyrus's: a server context (``sasl_server_new`` and its
property context) of about 6 KB per accepted connection, a quarter of an idle connection's
memory (bench/README.md, "One router at scale"). For a listener that offers only ANONYMOUS
and does not require authentication, Cyrus does nothing that proton's own implementation
(``default_sasl_impl``: ANONYMOUS, EXTERNAL, PLAIN as a client) does not: it offers
ANONYMOUS, and a peer choosing it is authenticated as ``anonymous``. (The C router's proton,
Debian's 0.37, has no Cyrus at all and always uses the built-in one.)

Kept on Cyrus: listeners that require authentication (Cyrus then refuses ANONYMOUS; the
built-in one would accept it) or offer any other mechanism, every listener when the router
names a Cyrus configuration directory (saslConfigDir: its files may restrict mechanisms;
saslConfigName alone, "qdrouterd" by default, is not taken as one), and outgoing connections.

proton exports what this needs (``pnx_sasl_set_implementation`` and ``default_sasl_impl``,
its SASL plugin interface) from the library python-qpid-proton loaded, but cproton_ffi does
not declare them: they are looked up there by cffi's backend, so this works without the
proton shim. Where they are missing (another proton build), connections keep Cyrus.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

log = logging.getLogger("qdrouter.SERVER")


def _load() -> Callable[[Any], None] | None:
    try:
        import _cffi_backend
        import cproton_ffi
        from cproton_ffi import ffi

        # cffi's backend finds the symbols (dlsym) and the compiled ffi names their types:
        # cffi's ABI mode (ffi.cdef) would import pycparser, 1.5 MB and 2,600 objects more.
        library = _cffi_backend.load_library(cproton_ffi.__file__)
        set_implementation = library.load_function(
            ffi.typeof("void(*)(void *, void *, void *)"), "pnx_sasl_set_implementation")
        builtin = ffi.cast("void *", library.load_function(ffi.typeof("void(*)(void)"), "default_sasl_impl"))
    except Exception as error:  # whatever went wrong, connections keep Cyrus
        log.debug("Proton's built-in SASL not found (%s): every connection uses Cyrus SASL", error)
        return None
    null = ffi.NULL

    def use_builtin(transport: Any) -> None:
        set_implementation(transport, builtin, null)

    return use_builtin


_USE_BUILTIN = _load()


@functools.lru_cache(maxsize=64)  # asked per accepted connection, with a listener's few settings
def builtin_sasl_suffices(mechanisms: str, authenticate_peer: bool, sasl_config_dir: bool) -> bool:
    """Whether a server connection with these settings can use the built-in SASL."""
    if _USE_BUILTIN is None or authenticate_peer or sasl_config_dir:
        return False
    return [m.upper() for m in mechanisms.replace(",", " ").split()] == ["ANONYMOUS"]


def use_builtin_sasl(transport: Any) -> None:
    """Make ``transport``'s SASL layer proton's built-in one (after pn_sasl, before any I/O)."""
    if _USE_BUILTIN is not None:
        _USE_BUILTIN(transport)
