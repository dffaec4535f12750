"""End to end: `qdmesh local` starts a real mesh, carries a message across it, stops cleanly."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
from proton import Message
from proton.utils import BlockingConnection, SendException

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 90.0  # a loaded CI machine starts Python processes slowly

pytestmark = pytest.mark.timeout(180)


class MeshCommand:
    """`python -m qdrouter.local_mesh local ...` with its stdout read line by line."""

    def __init__(self, args: List[str], log_dir: Path) -> None:
        env = dict(os.environ)
        src = str(REPO_ROOT / "router")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        self.log_dir = log_dir
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "qdrouter.local_mesh", "local", "--base-port", "0",
             "--log-dir", str(log_dir), *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True)  # signals reach only the command, as from a terminal's Ctrl-C
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: List[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        stderr = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
        raise AssertionError(f"no {pattern!r} within {timeout}s; stdout {self.seen}, stderr {stderr!r}")

    def addresses(self) -> Dict[str, str]:
        found = (re.match(r"\s+(\S+)\s+amqp://(\S+)", line) for line in self.seen)
        return {m.group(1): m.group(2) for m in found if m}

    def stop(self, sig: int) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(30)


def router_pids(marker: str) -> List[int]:
    """Processes whose command line mentions marker (our log dir holds their configs)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and "qdrouter" in cmdline and "local_mesh" not in cmdline:
                pids.append(int(entry.name))
    return pids


@pytest.fixture
def mesh_factory(tmp_path: Path) -> Iterator[List[MeshCommand]]:
    started: List[MeshCommand] = []
    yield started
    for m in started:  # a failed test must not leave a mesh behind
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait(10)
    for pid in router_pids(str(tmp_path)):
        os.kill(pid, signal.SIGKILL)


def send_across(src: str, dst: str, address: str, body: str) -> Message:
    """Send one unsettled message into src, receive and accept it at dst."""
    receiver_conn = BlockingConnection(dst, timeout=10)
    errors: List[BaseException] = []

    def send() -> None:
        # Its own thread: a blocking send waits for the receiver's accept.  The receiver's
        # address reaches src with the next mobile-address update; until then a message may be
        # released, so retry briefly.
        conn = BlockingConnection(src, timeout=20)
        try:
            sender = conn.create_sender(address)
            deadline = time.monotonic() + 20
            while True:
                try:
                    sender.send(Message(address=address, body=body))
                    return
                except SendException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        except BaseException as e:
            errors.append(e)
        finally:
            conn.close()

    try:
        receiver = receiver_conn.create_receiver(address, credit=10)
        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        msg = receiver.receive(timeout=30)
        receiver.accept()
        # Keep this connection's I/O going until the accept has reached the sender.
        receiver_conn.wait(lambda: not thread.is_alive(), timeout=30, msg="waiting for the sender")
        assert not thread.is_alive() and not errors, errors
        return msg
    finally:
        receiver_conn.close()


def test_line_of_three_carries_a_message_and_stops_on_sigint(tmp_path: Path,
                                                              mesh_factory: List[MeshCommand]) -> None:
    mesh = MeshCommand(["--routers", "3", "--topology", "line", "--id-prefix", "T"], tmp_path)
    mesh_factory.append(mesh)
    ready = mesh.wait_for(r"ready", READY_TIMEOUT)
    assert ready == "Mesh of 3 routers ready. Ctrl-C to stop."
    addrs = mesh.addresses()
    assert list(addrs) == ["T1", "T2", "T3"]
    assert any(f"qdstat -b {addrs['T1']} -n" in line for line in mesh.seen)
    assert len(router_pids(str(tmp_path))) == 3

    msg = send_across(addrs["T1"], addrs["T3"], "closest/e2e", "across the line")
    assert msg.body == "across the line"
    # The message crossed T2: T1 -> T2 -> T3 is the only path in a line.
    assert "Routes of T1" in (tmp_path / "T1.log").read_text()

    assert mesh.stop(signal.SIGINT) == 0
    mesh.wait_for(r"^Stopped\.$", 10)
    assert router_pids(str(tmp_path)) == []
    assert "Router T2 stopped" in (tmp_path / "T2.log").read_text()


def test_single_router_and_sigterm(tmp_path: Path, mesh_factory: List[MeshCommand]) -> None:
    mesh = MeshCommand(["--routers", "1"], tmp_path)
    mesh_factory.append(mesh)
    assert mesh.wait_for(r"ready", READY_TIMEOUT) == "Mesh of 1 router ready. Ctrl-C to stop."
    addr = mesh.addresses()["R1"]
    msg = send_across(addr, addr, "closest/one", "hello")
    assert msg.body == "hello"
    assert mesh.stop(signal.SIGTERM) == 0
    assert router_pids(str(tmp_path)) == []


def test_routers_go_when_qdmesh_is_killed(tmp_path: Path, mesh_factory: List[MeshCommand]) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("relies on PR_SET_PDEATHSIG")
    mesh = MeshCommand(["--routers", "2"], tmp_path)
    mesh_factory.append(mesh)
    mesh.wait_for(r"ready", READY_TIMEOUT)
    assert len(router_pids(str(tmp_path))) == 2
    assert mesh.stop(signal.SIGKILL) == -signal.SIGKILL
    deadline = time.monotonic() + 15
    while router_pids(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert router_pids(str(tmp_path)) == []
