"""Idle timeouts both ways: the router closes a peer that falls silent for longer than its
listener's idleTimeoutSeconds, and keeps an idle client alive with heartbeats at the pace
the client asked for. (The router ticks a connection's transport only when proton says it
is due: these are what that must not break.)"""

from __future__ import annotations

import socket
import time

from proton import Connection, Transport

from .routerproc import RouterFactory


def _header_and_open(container: str, idle_timeout_s: float = 0.0) -> bytes:
    """What a client without SASL writes first: the AMQP header and its open frame (asking
    the router for a frame at least every ``idle_timeout_s`` seconds, if not 0)."""
    transport = Transport()
    if idle_timeout_s:
        transport.idle_timeout = idle_timeout_s
    connection = Connection()
    connection.container = container
    transport.bind(connection)
    connection.open()
    out = transport.peek(transport.pending())
    assert out is not None
    return out


def test_router_closes_a_peer_silent_longer_than_the_idle_timeout(router_factory: RouterFactory) -> None:
    router = router_factory(extra_listeners={"short": {"idleTimeoutSeconds": "2", "authenticatePeer": "no"}})
    with socket.create_connection(("127.0.0.1", router.ports["short"]), timeout=10) as sock:
        sock.sendall(_header_and_open("silent-peer"))
        started = time.monotonic()
        received = b""
        while True:  # the router's header and open, perhaps heartbeats, then its close and EOF
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        silent_for = time.monotonic() - started
    assert received.startswith(b"AMQP"), received[:16]
    assert b"amqp:resource-limit-exceeded" in received, "closed for its idle timeout, saying so"
    assert 1.5 < silent_for < 6.0, f"closed after {silent_for:.1f} s of silence, idle timeout 2 s"


def test_router_keeps_an_idle_client_alive_with_heartbeats(router_factory: RouterFactory) -> None:
    """A client that asks for a frame at least every 2 s and then says nothing for 6 s gets
    one (a heartbeat) well within every 2 s, and is not closed."""
    router = router_factory(extra_listeners={"open": {"authenticatePeer": "no"}})
    with socket.create_connection(("127.0.0.1", router.ports["open"]), timeout=10) as sock:
        sock.sendall(_header_and_open("idle-client", idle_timeout_s=2.0))
        arrivals = []
        received = b""
        started = time.monotonic()
        while time.monotonic() - started < 6:
            sock.settimeout(max(0.1, 6 - (time.monotonic() - started)))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            assert chunk, f"the router closed the idle client: {received!r}"
            received += chunk
            arrivals.append(time.monotonic())
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:])]
    assert len(arrivals) >= 4 and max(gaps) < 2.0, f"frames at {gaps} s intervals"
    assert b"amqp:resource-limit-exceeded" not in received
