"""A real RabbitMQ broker (Debian's rabbitmq-server 3.x with its bundled AMQP 1.0 plugin) for tests.

Each ``RabbitBroker`` is one Erlang node bound to loopback only, with everything it writes
(config, enabled-plugins file, Mnesia, logs, feature flags, Erlang cookie) under its own
directory and its own epmd on its own port, so instances never touch a system broker or each
other. The server script is run directly (not through /usr/sbin's wrapper, which ``su``s to
the rabbitmq user and would put a process we cannot signal between us and the node), so the
node is our child in its own process group: ``stop()`` SIGTERMs that group (RabbitMQ shuts
down cleanly on SIGTERM), SIGKILLs it if it lingers, and then stops the epmd it owns.

RabbitMQ 3.x speaks AMQP 1.0 on its AMQP 0-9-1 port. Addresses (facts checked on 3.10.8):
``/queue/NAME`` declares a non-durable queue NAME on attach (sender or receiver);
``/amq/queue/NAME`` needs an existing queue: a *receiver* attach to a missing one makes the
broker end the whole session with ``amqp:not-found`` "NOT_FOUND - no queue 'NAME' in vhost
'/'", while a *sender* attach succeeds and its messages are accepted and dropped.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List

from proton import Message
from proton.utils import BlockingConnection

from tests.ports import free_port, free_port_block

START_TIMEOUT = 60.0     # Erlang boot plus plugin start: ~8-9 s on a 2-core machine
STOP_TIMEOUT = 30.0
CTL_DIST_PORTS = 11      # rabbitmqctl's distribution listener takes one of these


def _find(pattern: str) -> str | None:
    hits = sorted(glob.glob(pattern))
    return hits[-1] if hits else None


def server_script() -> str | None:
    """rabbitmq-server's real start script (below the /usr/sbin wrapper), or None."""
    return _find("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server")


def plugin_dir() -> str | None:
    return _find("/usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins/rabbitmq_amqp1_0-*")


def epmd_binary() -> str | None:
    return shutil.which("epmd") or _find("/usr/lib/erlang/erts-*/bin/epmd")


def missing_reason() -> str | None:
    """Why a broker cannot be started here (None when it can)."""
    if server_script() is None:
        return "rabbitmq-server is not installed (run .ci/setup.d/10-rabbitmq.sh)"
    if plugin_dir() is None:
        return "RabbitMQ's rabbitmq_amqp1_0 plugin is not installed"
    if epmd_binary() is None:
        return "Erlang's epmd is not installed"
    return None


class BrokerError(AssertionError):
    pass


class RabbitBroker:
    """One loopback RabbitMQ node; restartable on the same port and node name."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.epmd_port = free_port()
        self.dist_port = free_port()
        # rabbitmqctl's own Erlang distribution listener: its default range (35672-35682)
        # lies in the ephemeral range, where another test's connection may hold a port. Its
        # range (CTL_DIST_PORTS ports) is reserved whole: no other test is handed one of them.
        self.ctl_dist_port = free_port_block(CTL_DIST_PORTS)
        self.nodename = f"rabbit-test-{self.port}@localhost"
        self.proc: subprocess.Popen | None = None
        self.epmd: subprocess.Popen | None = None
        self.container_id: str | None = None   # the broker's AMQP container-id, once started
        self.start_seconds: List[float] = []       # how long each start took, to AMQP 1.0 open
        self.starts = 0
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
            "loopback_users = none\n"
            "log.console = false\n"
            "log.file.level = info\n")
        (workdir / "enabled_plugins").write_text("[rabbitmq_amqp1_0].\n")

    @property
    def url(self) -> str:
        return f"amqp://127.0.0.1:{self.port}"

    def env(self) -> Dict[str, str]:
        env = dict(os.environ)
        w = str(self.workdir)
        env.update({
            "HOME": w,   # the Erlang cookie lives in $HOME
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "ERL_EPMD_PORT": str(self.epmd_port),
            "RABBITMQ_NODENAME": self.nodename,
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_CTL_DIST_PORT_MIN": str(self.ctl_dist_port),
            "RABBITMQ_CTL_DIST_PORT_MAX": str(self.ctl_dist_port + CTL_DIST_PORTS - 1),
            "RABBITMQ_CONFIG_FILE": f"{w}/rabbitmq.conf",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{w}/enabled_plugins",
            "RABBITMQ_MNESIA_BASE": f"{w}/mnesia",
            "RABBITMQ_LOG_BASE": f"{w}/log",
            "RABBITMQ_FEATURE_FLAGS_FILE": f"{w}/feature_flags",
            "RABBITMQ_PID_FILE": f"{w}/rabbit.pid",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        })
        env.pop("RABBITMQ_CONF_ENV_FILE", None)
        return env

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        parts = []
        for path in [self.workdir / "server.out", *sorted((self.workdir / "log").glob("*.log"))]:
            try:
                parts.append(f"--- {path.name} ---\n{path.read_text(errors='replace')[-chars:]}")
            except OSError:
                pass
        return "\n".join(parts)

    # -- lifecycle ---------------------------------------------------------------------
    def _start_epmd(self) -> None:
        if self.epmd is not None and self.epmd.poll() is None:
            return
        epmd = epmd_binary()
        assert epmd is not None
        self.epmd = subprocess.Popen(
            [epmd, "-port", str(self.epmd_port), "-address", "127.0.0.1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=self.env(), start_new_session=True)

    def start(self, timeout: float = START_TIMEOUT) -> RabbitBroker:
        if self.is_running():
            return self
        script = server_script()
        if script is None:
            raise BrokerError(missing_reason() or "no rabbitmq-server")
        self._start_epmd()
        t0 = time.monotonic()
        with open(self.workdir / "server.out", "ab") as out:
            self.proc = subprocess.Popen(
                [script], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=self.env(), cwd=str(self.workdir), start_new_session=True)
        self.starts += 1
        deadline = t0 + timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerError(f"rabbitmq-server exited with {self.proc.returncode} during start\n"
                                  f"{self.log_tail()}")
            if self._port_open():
                try:
                    conn = BlockingConnection(self.url, timeout=5, allowed_mechs="ANONYMOUS")
                    self.container_id = conn.conn.remote_container
                    conn.close()
                    self.start_seconds.append(time.monotonic() - t0)
                    return self
                except Exception as e:
                    last = e
            time.sleep(0.2)
        self.stop()
        raise BrokerError(f"broker gave no AMQP 1.0 connection within {timeout}s (last: {last!r})\n"
                          f"{self.log_tail()}")

    def _port_open(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def _signal_group(self, proc: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop the node (SIGTERM: RabbitMQ's clean shutdown); keep epmd for a restart."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal_group(self.proc, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(self.proc, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # beam's helpers (erl_child_setup, inet_gethost) run in sessions of their own and exit
        # when beam does; anything left in the server's own group goes now.
        self._signal_group(self.proc, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self._port_open() and time.monotonic() < deadline:
            time.sleep(0.1)

    def shutdown(self) -> None:
        """Stop the node and its epmd: nothing of this broker is left running."""
        self.stop()
        if self.epmd is not None:
            if self.epmd.poll() is None:
                self._signal_group(self.epmd, signal.SIGTERM)
                try:
                    self.epmd.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._signal_group(self.epmd, signal.SIGKILL)
                    self.epmd.wait(timeout=10)
            self.epmd = None

    def leftover_processes(self) -> List[str]:
        """Command lines of processes still running that belong to this broker."""
        found = []
        for status in glob.glob("/proc/[0-9]*/cmdline"):
            try:
                cmd = Path(status).read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if self.nodename.split("@")[0] in cmd or f"-port {self.epmd_port}" in cmd \
                    or f"-epmd_port {self.epmd_port}" in cmd:
                found.append(cmd.strip())
        return found

    # -- direct AMQP 1.0 access ---------------------------------------------------------
    def connect(self) -> BlockingConnection:
        return BlockingConnection(self.url, timeout=10, allowed_mechs="ANONYMOUS")

    def send(self, address: str, bodies: List[Any]) -> None:
        """Send messages straight to the broker (each confirmed accepted)."""
        conn = self.connect()
        try:
            snd = conn.create_sender(address)
            for body in bodies:
                snd.send(Message(body=body))
        finally:
            conn.close()

    def drain(self, address: str, idle: float = 1.0, limit: int = 100000) -> List[Any]:
        """Receive (and accept) every message the broker hands out from ``address`` until it is
        idle for ``idle`` seconds."""
        conn = self.connect()
        bodies: List[Any] = []
        try:
            rcv = conn.create_receiver(address, credit=100)
            while len(bodies) < limit:
                try:
                    m = rcv.receive(timeout=idle)
                except Exception:   # proton.Timeout
                    break
                bodies.append(m.body)
                rcv.accept()
        finally:
            conn.close()
        return bodies

    def queue_depth(self, queue: str) -> int | None:
        """Messages ready in ``queue`` (rabbitmqctl list_queues), None if no such queue."""
        ctl = Path(server_script() or "").with_name("rabbitmqctl")
        r = subprocess.run([str(ctl), "-q", "list_queues", "name", "messages_ready"],
                           capture_output=True, text=True, env=self.env(), timeout=60,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise BrokerError(f"rabbitmqctl list_queues failed: {r.stderr or r.stdout}")
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == queue:
                return int(parts[1])
        return None
