"""Misbehaving peers: crashed consumers, garbage on the socket, abrupt disconnects."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, List

import pytest

from .amqpclient import ACCEPTED, MODIFIED, RELEASED, Client, Net, msg, send_and_settle
from .routerproc import Router

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
CRASH_RECEIVER = Path(__file__).with_name("crash_receiver.py")


def _read_line(stream: IO[str], net: Net, timeout: float, proc: subprocess.Popen) -> str:
    os.set_blocking(stream.fileno(), False)
    deadline = time.monotonic() + timeout
    buf = ""
    while time.monotonic() < deadline:
        chunk = stream.readline()
        if chunk:
            buf += chunk
            if buf.endswith("\n"):
                return buf.strip()
        if proc.poll() is not None and not chunk:
            break
        net.pump(0.02)
    err = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"crash_receiver gave no line within {timeout}s (exit {proc.poll()}): {err}")


def _spawn_crash_receiver(router: Router, address: str, credit: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(CRASH_RECEIVER), router.url, address, str(credit)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _assert_serving(router: Router, net: Net, client: Client, tag: str) -> None:
    """The router still routes for an existing connection and accepts new ones."""
    assert router.is_running(), router.describe()
    rcv = client.receiver(f"serving-check.{tag}")
    snd = client.sender(f"serving-check.{tag}")
    assert [o.state for o in send_and_settle(net, snd, [msg("still here")], timeout=10)] == [ACCEPTED]
    assert rcv.bodies() == ["still here"]
    fresh = net.connect(router.url)
    r2 = fresh.receiver(f"serving-check.{tag}.fresh")
    s2 = fresh.sender(f"serving-check.{tag}.fresh")
    send_and_settle(net, s2, [msg("new client")], timeout=10)
    assert r2.bodies() == ["new client"]


@pytest.mark.parametrize("survivor", [False, True], ids=["no-other-consumer", "with-survivor"])
def test_receiver_crash_every_message_gets_an_outcome(router: Router, net: Net, survivor: bool) -> None:
    """A consumer process holding 10 unsettled deliveries (of 30 sent) is SIGKILLed: the
    sender learns an outcome for all 30 messages - released/modified, or accepted by the
    surviving consumer, which must then really have received that message."""
    proc = _spawn_crash_receiver(router, "crash.q", 10)
    try:
        assert _read_line(proc.stdout, net, 15, proc) == "ATTACHED"  # type: ignore[arg-type]
        snd = net.connect(router.url).sender("crash.q")
        tags = [snd.send(msg(i)) for i in range(30)]
        assert _read_line(proc.stdout, net, 15, proc) == "READY"  # type: ignore[arg-type]
        other = net.connect(router.url).receiver("crash.q") if survivor else None
        net.pump(0.2)
        proc.kill()
        proc.wait(5)
        net.wait(lambda: all(t in snd.outcomes for t in tags), 15,
                 f"an outcome for every message (have {snd.settled_count()}/30)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    states = [snd.outcomes[t].state for t in tags]
    if other is None:
        assert set(states) <= {RELEASED, MODIFIED}, snd.outcome_counts()
    else:
        assert set(states) <= {ACCEPTED, RELEASED, MODIFIED}, snd.outcome_counts()
        got = set(other.bodies())
        for i, s in enumerate(states):
            if s == ACCEPTED:
                assert i in got, f"message {i} accepted but the survivor never got it"
    assert router.is_running()


def _raw_connect(router: Router) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", router.port), timeout=5)
    s.settimeout(5)
    return s


def _read_until_closed(s: socket.socket, timeout: float = 5.0) -> bytes:
    """All bytes the router sends until it closes the socket; fails if it never closes."""
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(4096)
        except ConnectionResetError:
            return data
        except socket.timeout:
            break
        if not chunk:
            return data
        data += chunk
    raise AssertionError(f"router did not close the connection within {timeout}s; sent {data!r}")


def test_bad_protocol_header_gets_amqp_header_and_close(router: Router, net: Net) -> None:
    """An unsupported protocol version is answered with the router's own AMQP header, then
    the router closes the socket (AMQP 1.0 section 2.2)."""
    client = net.connect(router.url)
    with _raw_connect(router) as s:
        s.sendall(b"AMQP\x00\x02\x00\x00")
        reply = _read_until_closed(s)
    assert reply[:8] in (AMQP_HEADER, SASL_HEADER), reply[:16]
    _assert_serving(router, net, client, "badheader")


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    bytes(range(256)) * 8,
    b"\x00" * 4096,
], ids=["http", "binary", "zeros"])
def test_garbage_bytes_close_only_that_connection(router: Router, net: Net, garbage: bytes) -> None:
    client = net.connect(router.url)
    rcv = client.receiver("robust.garbage.before")
    with _raw_connect(router) as s:
        s.sendall(garbage)
        _read_until_closed(s)
    assert client.alive, "a healthy client was disconnected because of another peer's garbage"
    assert rcv.remote_closed is False
    _assert_serving(router, net, client, "garbage")


def test_garbage_after_valid_header_closes_connection(router: Router, net: Net) -> None:
    """Valid header, then a frame whose size field is impossible (< 8): framing error."""
    client = net.connect(router.url)
    with _raw_connect(router) as s:
        s.sendall(AMQP_HEADER + struct.pack(">IBBH", 3, 2, 0, 0) + b"\xff" * 64)
        _read_until_closed(s)
    _assert_serving(router, net, client, "badframe")


def test_abrupt_disconnects_do_not_disturb_others(router: Router, net: Net) -> None:
    client = net.connect(router.url)
    rcv = client.receiver("robust.abrupt")
    snd = client.sender("robust.abrupt")
    for i in range(60):
        s = socket.create_connection(("127.0.0.1", router.port), timeout=5)
        if i % 3 == 1:
            s.sendall(AMQP_HEADER)
        elif i % 3 == 2:
            # header and the first half of an open frame, then RST
            s.sendall(AMQP_HEADER + struct.pack(">IBBH", 64, 2, 0, 0) + b"\x00\x53\x10")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
        s.close()
        if i % 10 == 0:
            send_and_settle(net, snd, [msg(i)], timeout=10)
    assert rcv.bodies() == list(range(0, 60, 10))
    _assert_serving(router, net, client, "abrupt")


def test_client_dropping_mid_conversation(router: Router, net: Net) -> None:
    """A proton client whose socket is cut (no close frame) while it holds a receiver and
    a sender: the router cleans up and keeps serving; the address has no consumer again."""
    victim = net.connect(router.url)
    victim.receiver("robust.dropped", settle=None)
    vsnd = victim.sender("robust.dropped")
    send_and_settle_tag = vsnd.send(msg("in flight"))
    net.pump(0.3)
    assert send_and_settle_tag not in vsnd.outcomes
    assert victim.conn.transport is not None
    victim.conn.transport.close_tail()
    victim.conn.transport.close_head()
    net.pump(0.5)
    other = net.connect(router.url)
    anon = other.sender(None)
    out = send_and_settle(net, anon, [msg("anyone?", to="robust.dropped")], timeout=10)
    assert out[0].state == RELEASED, "the dropped client's receiver must no longer be a route"
    _assert_serving(router, net, other, "dropped")


def test_idle_and_half_open_sockets_do_not_block_router(router: Router, net: Net) -> None:
    idle: List[socket.socket] = []
    try:
        for i in range(20):
            s = socket.create_connection(("127.0.0.1", router.port), timeout=5)
            if i % 2:
                s.sendall(AMQP_HEADER + struct.pack(">IBBH", 512, 2, 0, 0))  # frame never finished
            idle.append(s)
        client = net.connect(router.url)
        _assert_serving(router, net, client, "idle")
    finally:
        for s in idle:
            s.close()
