"""PyPy's young-generation size for a router process.

PyPy sizes its nursery from the CPU's cache (half the per-core cache it reads from
/proc/cpuinfo: 1 MB on the benchmark machines), and reads it only from the environment
(``PYPY_GC_NURSERY``) at start-up. A router forwarding at full speed keeps its credit
windows' worth of messages alive across many minor collections at that size: each
collection copies them to the old generation, where they die, and the major collector then
runs all the time (about 7% of the router's time in major steps and 6% in minor ones,
measured with PYPYLOG). A 32 MB nursery lets them die young (no major steps at all in the
same run); bench/README.md has the throughput figures.

So ``qdrouterd`` on PyPy re-executes itself once with ``PYPY_GC_NURSERY`` set, unless the
variable is set already (any value, including PyPy's own default, turns this off).
"""

from __future__ import annotations

import os
import sys
from typing import Mapping, Sequence

NURSERY_VARIABLE = "PYPY_GC_NURSERY"
ROUTER_NURSERY = "32MB"


def reexec_command(argv: Sequence[str], environ: Mapping[str, str],
                   implementation: str, executable: str) -> tuple[list[str], dict[str, str]] | None:
    """The command and environment to re-execute the router with, or None to run as is."""
    if implementation != "pypy" or NURSERY_VARIABLE in environ or not executable:
        return None
    return [executable, "-m", "qdrouter", *argv], {**environ, NURSERY_VARIABLE: ROUTER_NURSERY}


def tune_or_continue(argv: Sequence[str]) -> None:
    """Replace this process with one that has the router's nursery, when that applies;
    return (and run with PyPy's default) if it does not or the exec fails."""
    planned = reexec_command(argv, os.environ, sys.implementation.name, sys.executable)
    if planned is None:
        return
    command, environ = planned
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(command[0], command, environ)
    except OSError:
        return
