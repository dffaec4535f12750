#!/usr/bin/env python3
"""Check that the C load generators speak correct AMQP, against python-qpid-proton.

    python bench/interop_check.py

Checks, each with a python-qpid-proton peer (an independent AMQP stack):
  * qdm-send -> Python receiver that grants credit one message at a time,
    slowly (unsettled and pre-settled): every message arrives, its body is a
    `data` section of the requested size, `to` is the address, and the first
    8 body bytes are a plausible CLOCK_MONOTONIC timestamp.
  * Python receiver draining a listening qdm-send: the sender answers drain.
  * Python sender -> qdm-recv --validate: data bodies are accepted, an
    amqp-value body is reported as not a data section.
  * qdm-send -> qdm-recv --validate with multi-frame (300 kB) messages.
Prints 'N passed, N failed' and exits non-zero on any failure.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RECV, SEND, BenchError, ensure_built, free_port

TIMEOUT = 60.0


def start(argv: List[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ready_port(proc: subprocess.Popen[str]) -> int:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"no ready line; stderr: {proc.stderr.read() if proc.stderr else ''}")
    return int(json.loads(line)["port"])


def finish(proc: subprocess.Popen[str]) -> Dict[str, Any]:
    out, err = proc.communicate(timeout=TIMEOUT)
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    results = [x for x in lines if "role" in x]
    if not results:
        raise AssertionError(f"exit {proc.returncode}, no result; stderr: {err}")
    result: Dict[str, Any] = results[-1]
    result["_exit"] = proc.returncode
    result["_stderr"] = err
    return result


def run_container(handler: MessagingHandler) -> threading.Thread:
    t = threading.Thread(target=Container(handler).run, daemon=True)
    t.start()
    return t


class SlowReceiver(MessagingHandler):
    """Listens; grants one credit at a time, 5 ms apart; checks every message."""

    def __init__(self, port: int, count: int, address: str, size: int) -> None:
        super().__init__(prefetch=0, auto_accept=False)
        self.port, self.count, self.address, self.size = port, count, address, size
        self.got = 0
        self.problems: List[str] = []
        self.listening = threading.Event()
        self.done = threading.Event()

    def on_start(self, event: Any) -> None:
        self.acceptor = event.container.listen(f"127.0.0.1:{self.port}")
        self.listening.set()

    def on_link_opened(self, event: Any) -> None:
        if event.receiver:
            self.receiver = event.receiver
            event.receiver.flow(1)

    def on_message(self, event: Any) -> None:
        m = event.message
        body = bytes(m.body) if isinstance(m.body, (bytes, memoryview)) else None
        if body is None or not m.inferred:
            self.problems.append(
                f"body is not a data section: {type(m.body).__name__}, inferred={m.inferred}"
            )
        elif len(body) != self.size:
            self.problems.append(f"body size {len(body)} != {self.size}")
        else:
            age = time.monotonic_ns() - struct.unpack("<Q", body[:8])[0]
            if not 0 <= age < 60e9:
                self.problems.append(f"implausible timestamp age {age} ns")
        if m.address != self.address:
            self.problems.append(f"'to' is {m.address!r}, expected {self.address!r}")
        if not event.delivery.settled:
            self.accept(event.delivery)
        self.got += 1
        if self.got == self.count:
            event.connection.close()
            self.acceptor.close()
            self.done.set()
        else:
            event.container.schedule(0.005, self)

    def on_timer_task(self, event: Any) -> None:
        self.receiver.flow(1)


def check_slow_credit(presettled: bool) -> None:
    count, address = 40, "interop/slow"
    port = free_port()
    h = SlowReceiver(port, count, address, 100)  # python's API cannot report a port-0 bind
    run_container(h)
    h.listening.wait(10)
    time.sleep(0.2)  # listen() returns before the socket is bound
    argv = [str(SEND), "-c", f"127.0.0.1:{port}", "-a", address, "-m", str(count), "-t", "30"]
    sender = finish(start([*argv, "-p"] if presettled else argv))
    assert h.done.wait(TIMEOUT), f"python receiver got only {h.got}/{count}"
    assert not h.problems, h.problems[:3]
    assert sender["_exit"] == 0, sender
    assert sender["sent"] == count, sender
    if not presettled:
        assert sender["accepted"] == count, sender
    # 40 messages, one credit each 5 ms apart: the sender really waited for credit.
    assert sender["seconds"] > 0.1, sender


class DrainReceiver(MessagingHandler):
    def __init__(self, url: str) -> None:
        super().__init__(prefetch=0)
        self.url = url
        self.got = 0
        self.drained = threading.Event()

    def on_start(self, event: Any) -> None:
        event.container.create_receiver(self.url)

    def on_link_opened(self, event: Any) -> None:
        if event.receiver:
            event.receiver.drain(20)

    def on_message(self, event: Any) -> None:
        self.got += 1

    def on_link_flow(self, event: Any) -> None:
        link = event.link
        if link.is_receiver and link.credit == 0 and self.got == 5:
            self.drained.set()
            event.connection.close()


def check_drain() -> None:
    proc = start([str(SEND), "-l", "127.0.0.1:0", "-a", "interop/drain", "-m", "5", "-t", "30"])
    port = ready_port(proc)
    h = DrainReceiver(f"127.0.0.1:{port}/interop/drain")
    run_container(h)
    assert h.drained.wait(TIMEOUT), f"drain not answered (got {h.got})"
    sender = finish(proc)
    assert sender["sent"] == 5, sender


class PySender(MessagingHandler):
    def __init__(self, url: str, count: int, data_body: bool) -> None:
        super().__init__()
        self.url, self.count, self.data_body = url, count, data_body
        self.sent = 0
        self.accepted = 0
        self.done = threading.Event()

    def on_start(self, event: Any) -> None:
        event.container.create_sender(self.url)

    def on_sendable(self, event: Any) -> None:
        while event.sender.credit and self.sent < self.count:
            ts = struct.pack("<Q", time.monotonic_ns())
            if self.data_body:
                msg = Message(body=ts + b"x" * 92, address="interop/py", inferred=True)
            else:
                msg = Message(body="an amqp-value string", address="interop/py")
            event.sender.send(msg)
            self.sent += 1

    def on_accepted(self, event: Any) -> None:
        self.accepted += 1
        if self.accepted == self.count:
            event.connection.close()
            self.done.set()


def check_python_sender(data_body: bool) -> None:
    count = 50
    proc = start(
        [
            str(RECV),
            "-l",
            "127.0.0.1:0",
            "-m",
            str(count),
            "--validate",
            "--expect-to",
            "interop/py",
            "-t",
            "30",
        ]
    )
    port = ready_port(proc)
    h = PySender(f"127.0.0.1:{port}/interop/py", count, data_body)
    run_container(h)
    assert h.done.wait(TIMEOUT), f"python sender: {h.accepted}/{count} accepted"
    r = finish(proc)
    assert r["messages"] == count, r
    if data_body:
        assert r["invalid"] == 0 and r["non_data_body"] == 0 and r["_exit"] == 0, r
        assert r["p50_us"] >= 0, r
    else:
        assert r["invalid"] == count and r["non_data_body"] == count and r["_exit"] == 1, r


def check_large_messages() -> None:
    count, size = 50, 300_000
    proc = start(
        [
            str(RECV),
            "-l",
            "127.0.0.1:0",
            "-m",
            str(count),
            "--validate",
            "--expect-to",
            "interop/big",
            "-t",
            "30",
        ]
    )
    port = ready_port(proc)
    sender = finish(
        start(
            [
                str(SEND),
                "-c",
                f"127.0.0.1:{port}",
                "-a",
                "interop/big",
                "-m",
                str(count),
                "-s",
                str(size),
                "-t",
                "30",
            ]
        )
    )
    r = finish(proc)
    assert sender["accepted"] == count, sender
    assert r["messages"] == count and r["invalid"] == 0 and r["no_timestamp"] == 0 and r["_exit"] == 0, r


CHECKS: Dict[str, Callable[[], None]] = {
    "slow credit, unsettled": lambda: check_slow_credit(False),
    "slow credit, pre-settled": lambda: check_slow_credit(True),
    "drain": check_drain,
    "python sender, data body": lambda: check_python_sender(True),
    "python sender, amqp-value body is flagged": lambda: check_python_sender(False),
    "multi-frame messages": check_large_messages,
}


def main() -> int:
    try:
        ensure_built(False)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    passed = failed = 0
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as e:  # report every check, not just the first failure
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
