"""qdrouterd's PyPy re-exec decision (qdrouter/tuning/pypy_gc.py); the re-exec itself is tested on
a real PyPy in tests/router/test_pypy.py."""

from __future__ import annotations

import sys

from qdrouter.tuning.pypy_gc import NURSERY_VARIABLE, ROUTER_NURSERY, own_command_line, reexec_command


def test_pypy_without_a_nursery_setting_reexecutes_the_same_command_line() -> None:
    line = ["pypy3", "--jit", "off", "/usr/bin/qdrouterd", "-c", "/etc/qdrouterd.conf"]
    planned = reexec_command(line, {"HOME": "/root"}, "pypy", "/usr/bin/pypy3")
    assert planned == ("/usr/bin/pypy3", line, {"HOME": "/root", NURSERY_VARIABLE: ROUTER_NURSERY})


def test_no_reexec_on_cpython_or_when_the_user_chose_a_nursery() -> None:
    line = ["python3", "-m", "qdrouter", "-c", "x.conf"]
    assert reexec_command(line, {}, "cpython", "/usr/bin/python3") is None
    assert reexec_command(line, {NURSERY_VARIABLE: "4MB"}, "pypy", "/usr/bin/pypy3") is None
    assert reexec_command(line, {}, "pypy", "") is None


def test_own_command_line_is_the_kernels_view_of_this_process() -> None:
    line = own_command_line(sys.argv[1:])
    assert line[len(line) - len(sys.argv[1:]):] == sys.argv[1:]
    with open("/proc/self/cmdline", "rb") as handle:
        assert line == [part.decode() for part in handle.read().split(b"\0")[:-1]]


def test_own_command_line_falls_back_to_python_m_qdrouter_when_argv_does_not_match() -> None:
    expected = [sys.executable, "-m", "qdrouter", "--not-our-argument"]
    assert own_command_line(["--not-our-argument"]) == expected
