"""A router that stops answering (its process stopped, hung, or its host gone while the TCP
connection stays up) costs a management client its timeout, never more: the request times out,
and closing the client returns at once. An operator that discards a client after a timeout
must not wait for the router to come back (it waited as long as the router stayed frozen)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from qdrouter.tools.errors import ManagementTimeout
from qdrouter.tools.management_client import ManagementClient

from .conftest import RouterProcess, free_port

NODE = "org.apache.qpid.dispatch.router"


def test_a_frozen_router_costs_the_timeout_and_close_returns(tmp_path: Path) -> None:
    router = RouterProcess(tmp_path, "Frozen", free_port()).start([])
    assert router.proc is not None
    client = ManagementClient(router.bus, timeout=2.0)
    try:
        assert client.query(NODE), "the router answers before it is frozen"
        router.proc.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(ManagementTimeout):
            client.query(NODE)
        assert time.monotonic() - started < 10
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 5, "close() waited for the frozen router"
        started = time.monotonic()
        with pytest.raises(ManagementTimeout), ManagementClient(router.bus, timeout=2.0) as fresh:
            fresh.query(NODE)
        assert time.monotonic() - started < 10, "a new client's failure and close took too long"
    finally:
        router.proc.send_signal(signal.SIGCONT)
        client.close()
        router.stop()
