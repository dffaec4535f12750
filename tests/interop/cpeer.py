"""The C router (qdrouterd 1.19, built by /work/shared/peers/build-qdrouterd.sh as
``qdrouterd-c``) as a test peer: a config written from a few sections, a process started,
checked and stopped like the project's own routers (tests/router/routerproc.py)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List

from tests.ports import free_port
from tests.prerequisites import require

DEFAULT_C_ROUTER = Path.home() / ".cache" / "qdr-1.19.0" / "bin" / "qdrouterd-c"


WHY = "the C router qdrouterd 1.19 (bash .ci/setup.d/25-qdrouterd-c.sh builds it, or set $QDROUTERD_C)"


def require_c_router() -> Path:
    """qdrouterd-c, with its tools qdstat-c and qdmanage-c beside it; else skip (locally) or
    fail (in CI) the calling test."""
    binary = c_router_binary()
    tools = ("qdstat-c", "qdmanage-c")
    require(binary is not None and all(binary.with_name(tool).exists() for tool in tools), WHY)
    assert binary is not None
    return binary


def c_router_binary() -> Path | None:
    """$QDROUTERD_C, else qdrouterd-c on PATH, else the build script's default place."""
    for candidate in (os.environ.get("QDROUTERD_C"), shutil.which("qdrouterd-c"), str(DEFAULT_C_ROUTER)):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def section(name: str, attrs: Dict[str, object]) -> str:
    return name + " {\n" + "".join(f"    {k}: {v}\n" for k, v in attrs.items()) + "}\n"


class CRouter:
    """One qdrouterd-c process: one normal listener (``url``), ``workerThreads: 1``, every
    port on 127.0.0.1; ``sections`` adds connectors, more listeners, addresses."""

    def __init__(self, binary: Path, workdir: Path, router_id: str, mode: str = "interior",
                 sections: str = "", router_attrs: Dict[str, object] | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.router_id = router_id
        self.port = free_port()
        attrs: Dict[str, object] = {"mode": mode, "id": router_id, "workerThreads": 1,
                                    "helloIntervalSeconds": 1, "helloMaxAgeSeconds": 3,
                                    "raIntervalFluxSeconds": 4}
        attrs.update(router_attrs or {})
        self.config_path = workdir / f"{router_id}.conf"
        self.config_path.write_text(
            section("router", attrs)
            + section("listener", {"host": "127.0.0.1", "port": self.port, "saslMechanisms": "ANONYMOUS",
                                   "authenticatePeer": "no"})
            + section("address", {"prefix": "closest", "distribution": "closest"})
            + sections)
        self.log_path = workdir / f"{router_id}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"amqp://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> CRouter:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([str(self.binary), "-c", str(self.config_path)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         cwd=str(self.workdir), start_new_session=True)
        deadline = time.monotonic() + timeout
        while not _port_open(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"qdrouterd-c {self.router_id} did not start\n{self.log()}")
            time.sleep(0.05)
        return self

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def hard_kill(self) -> None:
        """SIGKILL, as a crash: no goodbye to the neighbours. ``start()`` starts it again."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def stop_all(routers: List[CRouter]) -> None:
    for router in routers:
        router.stop()
