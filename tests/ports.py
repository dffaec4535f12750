"""Ports for test processes to listen on.

Ports come from below the kernel's ephemeral range (ip_local_port_range), which neither
``bind(("", 0))`` nor an outgoing ``connect()`` ever hands out: a port picked here and bound
a few seconds later by a router, broker or API server cannot meanwhile become the local port
of some other test's connection (which a port picked by ``bind(0)`` can). No port is handed
out twice in one test run, and each is checked free when picked.

Several pytest processes pick ports at once: the workers of a parallel run (pytest-xdist),
and the pytest a test runs inside its own (the behaviour runner, the reaper's tests). The
pool is therefore divided, never shared: ``claim`` (called once per pytest process, by
tests/parallel.py) gives worker N of K the N-th of K+1 equal slices of the pool it inherited
(the last for a worker that replaces a crashed one),
keeps the lower half of that slice for itself and hands the upper half to the processes it
starts (``PORTS_ENV``), so that a pytest started by a test picks from ports its parent never
hands out. Two processes of one run therefore never pick the same port."""

from __future__ import annotations

import os
import random
import socket
from typing import Set, Tuple

PORTS_ENV = "QDMESH_TEST_PORTS"    # "FIRST-LAST": the pool a pytest started by a test picks from
# Below the ephemeral range: room for a parallel run's workers (and the runs their tests
# start) to hand out a few thousand ports each, none twice.
_POOL_SIZE = 22000
_given: Set[int] = set()
_random = random.Random()
_claimed: Tuple[int, int] | None = None


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _inherited() -> Tuple[int, int]:
    """The pool this process may divide: its parent run's share, or the whole pool."""
    given = os.environ.get(PORTS_ENV, "")
    try:
        first, last = (int(part) for part in given.split("-"))
        if 1024 < first <= last < 65536:
            return first, last
    except ValueError:
        pass
    low = _ephemeral_low()
    return max(1025, low - _POOL_SIZE), low - 1


def claim(worker: int = 0, workers: int = 1) -> Tuple[int, int]:
    """Take this process's ports: slice ``worker`` of ``workers`` of the inherited pool, the
    lower half for this process, the upper half exported for the processes it starts.
    Returns this process's own range."""
    global _claimed
    first, last = _inherited()
    size = (last - first + 1) // max(1, workers)
    first += size * worker
    last = first + size - 1
    middle = first + size // 2
    _claimed = (first, middle - 1)
    os.environ[PORTS_ENV] = f"{middle}-{last}"
    return _claimed


def _pool() -> Tuple[int, int]:
    return _claimed if _claimed is not None else _inherited()


def _bindable(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now, not handed out before in this run."""
    first, last = _pool()
    if last - first < 100:
        # An unusual ephemeral range leaves no room below it: let the kernel choose.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    for _ in range(1000):
        port = _random.randint(first, last)
        if port not in _given and _bindable(host, port):
            _given.add(port)
            return port
    raise RuntimeError(f"no free port in {first}-{last}")


def free_port_block(count: int, host: str = "127.0.0.1") -> int:
    """The first of ``count`` consecutive free ports, none handed out before in this run (for a
    program given a range, as rabbitmqctl's distribution listener is)."""
    first, last = _pool()
    for _ in range(1000):
        start = _random.randint(first, max(first, last - count + 1))
        block = range(start, start + count)
        if all(port not in _given and _bindable(host, port) for port in block):
            _given.update(block)
            return start
    raise RuntimeError(f"no {count} consecutive free ports in {first}-{last}")
