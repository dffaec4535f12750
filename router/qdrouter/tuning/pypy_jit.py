"""PyPy's JIT trace length for a router process.

PyPy's JIT records the event loop's hot path as one trace: the loop, the delivery handler
(amqp/data_path/deliveries.py) and what it calls, inlined, up to ``trace_limit`` operations (6,000
by default). The router's trace for a routed message is close to that. Past the limit,
PyPy cuts the trace into segments it optimizes one by one, and each message then costs
5-8% more instructions (callgrind, bench/HISTORY.md): the check that lets a
message wait unread for credit (amqp/data_path/waiting_producers.py) was enough to tip it over.
12,000 gives the trace room.

A ``--jit`` option on the interpreter's command line is the user's choice: then nothing
is changed.
"""

from __future__ import annotations

import sys
from typing import Sequence

TRACE_LIMIT = 12000

# What lengthen_traces set ("trace_limit=12000"), for the start-up log; None if nothing.
applied: str | None = None


def jit_settings(command_line: Sequence[str], implementation: str) -> str | None:
    """The JIT parameters to set, or None: not PyPy, or the user chose with ``--jit``."""
    if implementation != "pypy":
        return None
    if any(part == "--jit" or part.startswith("--jit=") for part in command_line):
        return None
    return f"trace_limit={TRACE_LIMIT}"


def lengthen_traces(command_line: Sequence[str]) -> None:
    """Set the router's trace limit on PyPy (``command_line``: this process's whole one)."""
    global applied
    settings = jit_settings(command_line, sys.implementation.name)
    if settings is None:
        return
    import pypyjit  # PyPy's own module

    pypyjit.set_param(settings)
    applied = settings
