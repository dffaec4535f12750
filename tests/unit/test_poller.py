"""amqp/wakeups/poller.py: selectors' semantics by descriptor (what AmqpServer and HttpServer rely on),
for the epoll poller and the selectors fallback alike; and which listeners use proton's
built-in SASL instead of Cyrus (amqp/connections/sasl_builtin.py)."""

from __future__ import annotations

import select
import socket
import time
from typing import List

import pytest

from qdrouter.amqp.connections.sasl_builtin import builtin_sasl_suffices
from qdrouter.amqp.wakeups.poller import EVENT_READ, EVENT_WRITE, Poller, _EpollPoller, _SelectorPoller

KINDS: List[type] = [_SelectorPoller] + ([_EpollPoller] if hasattr(select, "epoll") else [])


@pytest.mark.parametrize("kind", KINDS)
def test_a_short_wait_is_rounded_up_not_spun(kind: type) -> None:
    """epoll counts milliseconds: a timeout rounded down would wake before the loop's
    deadline, and the loop would spin until it."""
    poller: Poller = kind()
    try:
        start = time.monotonic()
        assert poller.select(0.0004) == []
        assert time.monotonic() - start >= 0.0004
    finally:
        poller.close()


@pytest.mark.parametrize("kind", KINDS)
def test_readiness_by_descriptor(kind: type) -> None:
    poller: Poller = kind()
    a, b = socket.socketpair()
    try:
        poller.register(a.fileno(), EVENT_READ)
        assert poller.select(0) == []
        b.send(b"x")
        assert poller.select(1.0) == [(a.fileno(), EVENT_READ)]
        poller.modify(a, EVENT_READ | EVENT_WRITE)  # a socket object works as well as its fd
        assert poller.select(1.0) == [(a.fileno(), EVENT_READ | EVENT_WRITE)]
        poller.unregister(a.fileno())
        assert poller.select(0) == []
    finally:
        poller.close()
        a.close()
        b.close()


@pytest.mark.parametrize("kind", KINDS)
def test_errors_are_key_errors_as_with_selectors(kind: type) -> None:
    poller: Poller = kind()
    a, b = socket.socketpair()
    try:
        poller.register(a.fileno(), EVENT_READ)
        with pytest.raises(KeyError):
            poller.register(a.fileno(), EVENT_WRITE)
        with pytest.raises(KeyError):
            poller.modify(b.fileno(), EVENT_READ)
        with pytest.raises(KeyError):
            poller.unregister(b.fileno())
    finally:
        poller.close()
        a.close()
        b.close()


def test_hang_up_is_reported_as_readable_and_writable() -> None:
    if not hasattr(select, "epoll"):
        pytest.skip("epoll only")
    poller = _EpollPoller()
    a, b = socket.socketpair()
    try:
        poller.register(a.fileno(), EVENT_READ)
        b.close()
        (fd, mask), = poller.select(1.0)
        assert fd == a.fileno() and mask & EVENT_READ
    finally:
        poller.close()
        a.close()


@pytest.mark.parametrize("mechanisms, authenticate, config_dir, builtin", [
    ("ANONYMOUS", False, False, True),
    ("anonymous", False, False, True),
    ("ANONYMOUS", True, False, False),          # Cyrus refuses ANONYMOUS then; keep it
    ("ANONYMOUS PLAIN", False, False, False),
    ("PLAIN", False, False, False),
    ("ANONYMOUS", False, True, False),          # a Cyrus configuration directory may matter
])
def test_builtin_sasl_only_where_it_answers_as_cyrus(mechanisms: str, authenticate: bool, config_dir: bool,
                                                     builtin: bool) -> None:
    assert builtin_sasl_suffices(mechanisms, authenticate, config_dir) is builtin
