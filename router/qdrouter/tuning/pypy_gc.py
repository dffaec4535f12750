"""PyPy's young-generation size for a router process.

PyPy sizes its nursery from the "cache size" line of /proc/cpuinfo: half of it, or 1 MB
when it says 2 MB or less. Intel CPUs report their L3 there (a nursery of tens of MB); the
AMD EPYC benchmark machine reports its 1 MB per-core L2, so the nursery is 1 MB. PyPy reads
any other size only from the environment (``PYPY_GC_NURSERY``), at start-up.

At 1 MB, a router forwarding at full speed keeps its credit windows' worth of messages alive
across many minor collections: each collection copies them to the old generation, where
they die, and the major collector then runs all the time (about 7% of the router's time in
major steps and 6% in minor ones, measured with PYPYLOG). A 32 MB nursery lets them die
young (no major steps at all in the same run); bench/HISTORY.md has the
throughput figures.

So ``qdrouterd`` on PyPy re-executes itself once, with the same command line (interpreter
options included) and ``PYPY_GC_NURSERY`` set, unless the variable is set already (any
value, including PyPy's own default, turns this off).
"""

from __future__ import annotations

import os
import sys
from typing import Mapping, Sequence

NURSERY_VARIABLE = "PYPY_GC_NURSERY"
ROUTER_NURSERY = "32MB"


def reexec_command(command_line: Sequence[str], environ: Mapping[str, str],
                   implementation: str, executable: str) -> tuple[str, list[str], dict[str, str]] | None:
    """How to re-execute the router: (program, its argv, environment), or None to run as is.
    ``command_line`` is this process's whole command line, interpreter options included."""
    if implementation != "pypy" or NURSERY_VARIABLE in environ or not executable or not command_line:
        return None
    return executable, list(command_line), {**environ, NURSERY_VARIABLE: ROUTER_NURSERY}


def own_command_line(argv: Sequence[str]) -> list[str]:
    """This process's command line as the kernel has it (interpreter options such as
    ``--jit`` or ``-X`` are not in sys.argv, and PyPy 3.9 has no sys.orig_argv); failing
    that, ``python -m qdrouter`` with ``argv``."""
    try:
        with open("/proc/self/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        raw = b""
    parts = [os.fsdecode(part) for part in raw.split(b"\0")[:-1]]
    if len(parts) > len(argv) and parts[len(parts) - len(argv):] == list(argv):
        return parts
    return [sys.executable, "-m", "qdrouter", *argv]


def tune_or_continue(argv: Sequence[str]) -> None:
    """Replace this process with one that has the router's nursery, when that applies;
    return (and run with PyPy's default) if it does not or the exec fails. ``argv``: the
    router's arguments (sys.argv[1:])."""
    if sys.implementation.name != "pypy" or NURSERY_VARIABLE in os.environ:
        return
    planned = reexec_command(own_command_line(argv), os.environ, sys.implementation.name, sys.executable)
    if planned is None:
        return
    program, command_line, environ = planned
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(program, command_line, environ)
    except OSError:
        return
