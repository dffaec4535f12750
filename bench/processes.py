"""Child processes and local ports for the benchmarks (bench/run.py, bench/mesh.py).

Standard library only (Python 3.9+).
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from typing import IO, Any, Dict, List, Sequence

HOST = "127.0.0.1"


class BenchError(Exception):
    """A measurement could not be taken; the message says why."""



class Proc:
    """A child process whose stdout lines are collected by a thread.

    JSON lines (the load generators' ready and result lines) are parsed; the
    last few lines of any output are kept for error messages.  The child gets
    its own session so that kill() can take down anything it spawned.
    """

    def __init__(self, name: str, argv: Sequence[str], env: Dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=env,
                start_new_session=True,
            )
        except OSError as e:
            raise BenchError(f"cannot start {name} ({shlex.join(self.argv)}): {e}") from e
        self.events: queue.Queue[Dict[str, Any]] = queue.Queue()
        self.results: List[Dict[str, Any]] = []
        self.tail: deque[str] = deque(maxlen=40)
        self._reader = threading.Thread(target=self._read, name=f"{name}-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for raw in self.popen.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.tail.append(line)
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                if "event" in obj:
                    self.events.put(obj)
                else:
                    self.results.append(obj)

    def stderr_tail(self, lines: int = 20) -> str:
        text: List[str] = []
        if not self._stderr.closed:
            self._stderr.seek(0)
            text = self._stderr.read().decode(errors="replace").strip().splitlines()
        out = text[-lines:] + [f"(stdout) {x}" for x in list(self.tail)[-5:] if not x.startswith("{")]
        return "\n".join("    " + x for x in out) or "    (no output)"

    def wait_event(self, event: str, timeout: float) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                obj = self.events.get(timeout=0.05)
                if obj.get("event") == event:
                    return obj
                continue
            except queue.Empty:
                pass
            if self.popen.poll() is not None:
                self._reader.join(1)
                if not self.events.empty():
                    continue
                raise BenchError(
                    f"{self.name} exited with code {self.popen.returncode} before '{event}':\n"
                    + self.stderr_tail()
                )
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name}: no '{event}' within {timeout:.0f}s:\n" + self.stderr_tail())

    def result(self, timeout: float) -> Dict[str, Any]:
        """Wait for exit and return the JSON result line; raise on failure."""
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(
                f"{self.name} did not finish within {timeout:.0f}s (killed):\n" + self.stderr_tail()
            ) from None
        self._reader.join(5)
        if not self.results:
            raise BenchError(
                f"{self.name} exited with code {self.popen.returncode} without a result:\n"
                + self.stderr_tail()
            )
        return self.results[-1]

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.popen.pid, sig)  # its own session: the whole group is ours
        except (ProcessLookupError, PermissionError):
            try:
                self.popen.send_signal(sig)
            except ProcessLookupError:
                pass

    def kill(self, grace: float = 0.0) -> None:
        """Stop the child: SIGTERM and up to `grace` s to exit (if grace > 0), then SIGKILL."""
        if self.popen.poll() is None and grace > 0:
            self._signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        if self.popen.poll() is None:
            self._signal(signal.SIGKILL)
            try:
                self.popen.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        self.kill()
        self._stderr.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _listening_ports() -> set[int] | None:
    """Ports in LISTEN state per /proc/net/tcp{,6}; None if /proc is unavailable.

    Checking /proc rather than connecting avoids handing the router a junk
    connection (no AMQP header) before the benchmark even starts.
    """
    ports: set[int] = set()
    found = False
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if len(cols) > 3 and cols[3] == "0A":  # TCP_LISTEN
                        ports.add(int(cols[1].rsplit(":", 1)[1], 16))
            found = True
        except (OSError, StopIteration, ValueError):
            continue
    return ports if found else None


def wait_for_port(port: int, proc: Proc, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.returncode is not None:
            raise BenchError(
                f"router exited with code {proc.returncode} before listening on port {port}:\n"
                + proc.stderr_tail()
            )
        ports = _listening_ports()
        if ports is not None:
            if port in ports:
                return
        else:
            try:
                with socket.create_connection((HOST, port), timeout=0.5):
                    return
            except OSError:
                pass
        if time.monotonic() > deadline:
            raise BenchError(
                f"router not listening on port {port} after {timeout:.0f}s:\n" + proc.stderr_tail()
            )
        time.sleep(0.05)


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time a live process has used so far (from /proc), or None when
    it cannot be read (the process is gone, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    fields = stat[stat.rindex(")") + 2:].split()
    # utime and stime are the stat file's fields 14 and 15; fields[0] here is field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
