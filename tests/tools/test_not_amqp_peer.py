"""Pointing the tools at something that is no AMQP listener (an HTTP port, a TLS port, a
peer that hangs up) says so in one line, not "authentication failed" with a proton repr."""

from __future__ import annotations

import socket
import threading
from typing import Iterator

import pytest

from qdrouter.tools import ManagementClient
from qdrouter.tools.errors import ManagementConnectionError

from .conftest import run_tool


def _serve(answer: bytes | None) -> Iterator[int]:
    """A port whose every connection reads the client's first bytes, then writes ``answer``
    (None: says nothing) and hangs up."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(64)
                    if answer is not None:
                        conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(5)
    server.close()


@pytest.fixture
def http_port() -> Iterator[int]:
    yield from _serve(b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")


@pytest.fixture
def hang_up_port() -> Iterator[int]:
    yield from _serve(None)


def test_http_port(http_port: int) -> None:
    with pytest.raises(ManagementConnectionError) as info:
        ManagementClient(f"127.0.0.1:{http_port}", timeout=5).connect()
    assert str(info.value) == (f"cannot connect to 127.0.0.1:{http_port}: the peer does not speak AMQP "
                               "(it answered 'HTTP/1.1 400 Bad Request')")


def test_peer_that_hangs_up(hang_up_port: int) -> None:
    with pytest.raises(ManagementConnectionError) as info:
        ManagementClient(f"127.0.0.1:{hang_up_port}", timeout=5).connect()
    assert "the peer closed the connection without an AMQP answer" in str(info.value)
    assert "authentication" not in str(info.value)


def test_qdstat_and_qdmanage_against_an_http_port(http_port: int) -> None:
    for tool, args in (("qdstat", ["-g"]), ("qdmanage", ["query", "--type", "listener"])):
        r = run_tool(tool, "-b", f"127.0.0.1:{http_port}", *args)
        assert r.code == 1, r.err
        assert r.err == (f"{tool}: error: cannot connect to 127.0.0.1:{http_port}: the peer does not "
                         "speak AMQP (it answered 'HTTP/1.1 400 Bad Request')\n")
