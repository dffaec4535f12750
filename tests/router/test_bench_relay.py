"""bench/loadgen/qdm-relay, the byte relay bench/run.py --relay puts between the clients: it
must pass every byte both ways, unchanged and in order, pass a half-close on, and carry an
AMQP conversation (here to a router) as if the clients were connected directly."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest
from proton import Message

from tests.prerequisites import require

from .amqpclient import Net, send_and_settle
from .routerproc import Router

BENCH = Path(__file__).resolve().parents[2] / "bench"
SOURCE = BENCH / "loadgen" / "qdm-relay.c"
sys.path.insert(0, str(BENCH))

from processes import process_cpu_seconds  # noqa: E402


@pytest.fixture(scope="module")
def relay_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    require(cc is not None, "a C compiler (gcc) for bench/loadgen/qdm-relay.c")
    assert cc is not None
    out = tmp_path_factory.mktemp("relay") / "qdm-relay"
    subprocess.run([cc, "-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Werror", "-o", str(out), str(SOURCE)],
                   check=True, capture_output=True, text=True)
    return out


@contextmanager
def running_relay(binary: Path, target_port: int) -> Iterator[Tuple[subprocess.Popen, int]]:
    """The relay in front of ``target_port``, and the port it listens on; it must still be
    serving at the end, and stop cleanly on SIGTERM."""
    proc = subprocess.Popen([str(binary), "-l", "127.0.0.1:0", "-t", f"127.0.0.1:{target_port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready"
        yield proc, int(ready["port"])
        assert proc.poll() is None, "the relay must keep serving after a pair closes"
    finally:
        proc.terminate()
        assert proc.wait(5) == 0


def cpu_used_over(pid: int, seconds: float) -> float:
    before = process_cpu_seconds(pid)
    time.sleep(seconds)
    after = process_cpu_seconds(pid)
    assert before is not None and after is not None
    return after - before


@pytest.fixture
def echo_upper_server() -> Iterator[socket.socket]:
    """A target that reads until EOF, then answers with everything it read, upper-cased,
    and closes: so a client sees its half-close passed on, and the answer after it."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            chunks: List[bytes] = []
            while data := conn.recv(65536):
                chunks.append(data)
            conn.sendall(b"".join(chunks).upper())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server
    server.close()
    thread.join(5)


def test_bytes_pass_both_ways_in_order_and_a_half_close_is_passed_on(
    relay_binary: Path, echo_upper_server: socket.socket
) -> None:
    with running_relay(relay_binary, echo_upper_server.getsockname()[1]) as (_, port):
        # Several MiB: more than the relay's buffers and the sockets', so it must stop reading
        # while its peer is slow and resume, without losing or reordering a byte.
        payload = bytes(range(97, 123)) * (5 * 1024 * 1024 // 26)
        with socket.create_connection(("127.0.0.1", port)) as client:
            received: List[bytes] = []
            reader = threading.Thread(target=lambda: received.extend(iter(lambda: client.recv(65536), b"")))
            reader.start()
            client.sendall(payload)
            client.shutdown(socket.SHUT_WR)
            reader.join(30)
        assert not reader.is_alive(), "the target's close never reached the client"
        assert b"".join(received) == payload.upper()


def test_a_target_that_hangs_up_ends_the_pair_without_the_relay_spinning(relay_binary: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))

    def hang_up() -> None:
        conn, _ = server.accept()
        conn.recv(1000)
        conn.close()  # with more unread: the client's bytes now have nowhere to go

    with server, running_relay(relay_binary, server.getsockname()[1]) as (relay, port):
        threading.Thread(target=hang_up, daemon=True).start()
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.settimeout(10)
            try:
                client.sendall(b"x" * (8 * 1024 * 1024))
                client.shutdown(socket.SHUT_WR)
                assert client.recv(1) == b"", "the relay must end the client's side too"
            except (ConnectionResetError, BrokenPipeError):
                pass  # as good an ending: the relay closed its side while bytes were in flight
        assert cpu_used_over(relay.pid, 1.0) < 0.2, "the relay keeps a core busy after the pair ended"
        assert relay.poll() is None
        # And it still serves a new pair.
        threading.Thread(target=hang_up, daemon=True).start()
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(b"hello")
            client.settimeout(10)
            assert client.recv(10) == b""


def test_a_target_reset_while_the_client_is_not_reading_leaves_the_relay_idle(relay_binary: Path) -> None:
    """The target resets its connection (it closes with bytes unread) while the relay holds
    bytes for a client that is not reading: the relay waits for the client without spinning,
    then gives it what it holds and ends its side."""
    server = socket.create_server(("127.0.0.1", 0))
    sent = bytearray()

    def send_then_reset() -> None:
        conn, _ = server.accept()
        conn.recv(10)  # the rest of the client's bytes stay unread: close() resets
        conn.setblocking(False)
        deadline = time.monotonic() + 0.5
        chunk = bytes(range(256)) * 256
        while time.monotonic() < deadline:
            try:
                sent.extend(chunk[: conn.send(chunk)])
            except BlockingIOError:
                time.sleep(0.01)
        conn.close()

    thread = threading.Thread(target=send_then_reset, daemon=True)
    thread.start()
    with server, running_relay(relay_binary, server.getsockname()[1]) as (relay, port):
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(b"y" * 1000)
            thread.join(5)
            time.sleep(0.2)
            assert cpu_used_over(relay.pid, 1.0) < 0.2, "the relay spins while the client is not reading"
            client.settimeout(10)
            received = bytearray()
            try:
                while data := client.recv(65536):
                    received.extend(data)
            except ConnectionResetError:
                pass
        assert len(received) > 0 and bytes(received) == bytes(sent[: len(received)])


def test_an_amqp_conversation_runs_through_the_relay(relay_binary: Path, router: Router, net: Net) -> None:
    with running_relay(relay_binary, router.port) as (_, port):
        url = f"amqp://127.0.0.1:{port}"
        rcv = net.connect(url).receiver("relay/q")
        snd = net.connect(url).sender("relay/q")
        outcomes = send_and_settle(net, snd, [Message(body=f"m{i}") for i in range(200)])
        assert [o.name for o in outcomes] == ["accepted"] * 200
        assert rcv.bodies() == [f"m{i}" for i in range(200)]


def test_usage_mistakes_are_named(relay_binary: Path) -> None:
    missing = subprocess.run([str(relay_binary), "-l", "127.0.0.1:0"],
                             capture_output=True, text=True, timeout=5)
    assert missing.returncode == 1
    assert "-t HOST:PORT" in missing.stderr
    bad = subprocess.run([str(relay_binary), "-l", "127.0.0.1", "-t", "127.0.0.1:1"],
                         capture_output=True, text=True, timeout=5)
    assert bad.returncode == 1
    assert "expected HOST:PORT, got '127.0.0.1'" in bad.stderr
