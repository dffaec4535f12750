"""Connectors resolve host names in a thread, so a slow DNS cannot stall the router's loop."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from qdrouter.amqp.connections.resolver import resolve


def _wait(resolution, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not resolution.done:
        assert time.monotonic() < deadline, "no answer"
        time.sleep(0.01)


def test_ip_address_needs_no_lookup() -> None:
    resolution = resolve("127.0.0.1", 5672)
    assert resolution.done and resolution.error is None
    assert resolution.result is not None and resolution.result[4] == ("127.0.0.1", 5672)


def test_slow_lookup_does_not_block_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def slow(*args: Any, **kwargs: Any) -> Any:   # a DNS server taking its time
        answer.wait(10)
        return real(*args, **kwargs)

    # The lookup answers only when the test says so: resolve() returning at all, with the
    # lookup not done, shows the caller was not blocked (no wall-clock bound to miss).
    answer = threading.Event()
    monkeypatch.setattr(socket, "getaddrinfo", slow)
    resolution = resolve("localhost", 5672)
    assert not resolution.done
    answer.set()
    _wait(resolution)
    assert resolution.error is None and resolution.result is not None
    assert resolution.result[4][1] == 5672


def test_unknown_name_reports_the_error() -> None:
    resolution = resolve("no-such-host.invalid", 5672)
    _wait(resolution, 30)
    assert resolution.result is None and isinstance(resolution.error, OSError)
