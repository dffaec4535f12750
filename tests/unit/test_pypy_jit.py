"""qdrouter/tuning/pypy_jit.py: on PyPy the router lengthens the JIT's traces, unless the user
chose JIT options on the interpreter's command line."""

from __future__ import annotations

from qdrouter.tuning.pypy_jit import TRACE_LIMIT, jit_settings


def test_pypy_gets_the_routers_trace_limit() -> None:
    command_line = ["/usr/bin/pypy3", "-m", "qdrouter", "-c", "qdrouterd.conf"]
    assert jit_settings(command_line, "pypy") == f"trace_limit={TRACE_LIMIT}"
    assert TRACE_LIMIT > 6000, "above PyPy's default, or it changes nothing"


def test_jit_options_the_user_gave_are_kept() -> None:
    for options in (["--jit", "off"], ["--jit=trace_limit=9000"]):
        assert jit_settings(["/usr/bin/pypy3", *options, "-m", "qdrouter"], "pypy") is None


def test_cpython_is_left_alone() -> None:
    assert jit_settings(["/usr/bin/python3", "-m", "qdrouter"], "cpython") is None
