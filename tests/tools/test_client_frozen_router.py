"""A router that stops answering (its process stopped, hung, or its host gone while the TCP
connection stays up) costs a management client its timeout, never more: the request times out,
and closing the client returns at once, over plain AMQP as over TLS. An operator that discards
a client after a timeout must not wait for the router to come back (it waited as long as the
router stayed frozen)."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from qdrouter.tools.errors import ManagementTimeout
from qdrouter.tools.management_client import ManagementClient
from tests.security.certs import CertAuthority

from .conftest import RouterProcess, free_port

NODE = "org.apache.qpid.dispatch.router"


def _frozen_router_setup(tmp_path: Path, tls: bool) -> tuple[List[Any], Dict[str, Any], str]:
    """(extra config, client options, url scheme) for a router reached over TLS or not."""
    if not tls:
        return [], {}, ""
    ca = CertAuthority(tmp_path / "pki")
    server = ca.issue("server", "/CN=localhost", hosts=("localhost",))
    profile = ["sslProfile", {"name": "tls", "certFile": str(server.cert),
                              "privateKeyFile": str(server.key), "caCertFile": str(ca.cert)}]
    return [profile], {"ssl_trustfile": str(ca.cert)}, "amqps://"


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            with socket.create_connection(("localhost", port), timeout=0.5):
                return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            time.sleep(0.05)


@pytest.mark.parametrize("tls", [False, True], ids=["amqp", "amqps"])
@pytest.mark.parametrize("ask_first", [True, False], ids=["after-a-timeout", "idle"])
def test_a_frozen_router_costs_the_timeout_and_close_returns(tmp_path: Path, tls: bool,
                                                             ask_first: bool) -> None:
    extra, options, scheme = _frozen_router_setup(tmp_path, tls)
    router = RouterProcess(tmp_path, "Frozen", free_port())
    if tls:
        # The listener the fixture class makes is plain: a second one speaks TLS.
        tls_port = free_port()
        extra.append(["listener", {"host": "localhost", "port": str(tls_port), "sslProfile": "tls",
                                   "requireSsl": True, "saslMechanisms": "ANONYMOUS"}])
    router.start(extra)
    assert router.proc is not None
    if tls:
        _wait_listening(tls_port)
    url = f"{scheme}localhost:{tls_port}" if tls else router.bus
    client = ManagementClient(url, timeout=2.0, **options)
    try:
        assert client.query(NODE), "the router answers before it is frozen"
        router.proc.send_signal(signal.SIGSTOP)
        if ask_first:
            started = time.monotonic()
            with pytest.raises(ManagementTimeout):
                client.query(NODE)
            assert time.monotonic() - started < 10
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 5, "close() waited for the frozen router"
        started = time.monotonic()
        with pytest.raises(ManagementTimeout), ManagementClient(url, timeout=2.0, **options) as fresh:
            fresh.query(NODE)
        assert time.monotonic() - started < 10, "a new client's failure and close took too long"
    finally:
        router.proc.send_signal(signal.SIGCONT)
        client.close()
        router.stop()
