"""qdrouterd's PyPy re-exec decision (qdrouter/pypy_gc.py); the re-exec itself is tested on
a real PyPy in tests/router/test_pypy.py."""

from __future__ import annotations

from qdrouter.pypy_gc import NURSERY_VARIABLE, ROUTER_NURSERY, reexec_command


def test_pypy_without_a_nursery_setting_reexecutes_with_the_same_arguments() -> None:
    planned = reexec_command(["-c", "/etc/qdrouterd.conf", "-P", "/run/r.pid"], {"HOME": "/root"},
                             "pypy", "/usr/bin/pypy3")
    assert planned is not None
    command, environ = planned
    assert command == ["/usr/bin/pypy3", "-m", "qdrouter", "-c", "/etc/qdrouterd.conf", "-P", "/run/r.pid"]
    assert environ == {"HOME": "/root", NURSERY_VARIABLE: ROUTER_NURSERY}


def test_no_reexec_on_cpython_or_when_the_user_chose_a_nursery() -> None:
    assert reexec_command(["-c", "x.conf"], {}, "cpython", "/usr/bin/python3") is None
    assert reexec_command(["-c", "x.conf"], {NURSERY_VARIABLE: "4MB"}, "pypy", "/usr/bin/pypy3") is None
    assert reexec_command(["-c", "x.conf"], {}, "pypy", "") is None
