"""Ports for test processes to listen on.

Ports come from below the kernel's ephemeral range (ip_local_port_range), which neither
``bind(("", 0))`` nor an outgoing ``connect()`` ever hands out: a port picked here and bound
a few seconds later by a router, broker or API server cannot meanwhile become the local port
of some other test's connection (which a port picked by ``bind(0)`` can). No port is handed
out twice in one test run, and each is checked free when picked."""

from __future__ import annotations

import random
import socket
from typing import Set, Tuple

_POOL_SIZE = 12000
_given: Set[int] = set()
_random = random.Random()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _pool() -> Tuple[int, int]:
    low = _ephemeral_low()
    return max(1025, low - _POOL_SIZE), low - 1


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
