"""`qdmesh console` as a real subprocess (the installed command's module, from the working tree)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import List

from tests.router.routerproc import free_port, router_env


def run_console_command(args: List[str], timeout: float = 20.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qdrouter.local_mesh", "console", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                          env=router_env())


class ConsoleProcess:
    def __init__(self, workdir: Path, router_url: str, interval: float = 0.5) -> None:
        self.port = free_port()
        self.log_path = workdir / f"console-{self.port}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "qdrouter.local_mesh", "console", "--router", router_url,
                 "--port", str(self.port), "--interval", str(interval), "--timeout", "2"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=router_env(),
                start_new_session=True)
        deadline = time.monotonic() + 15
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"qdmesh console did not start:\n{self.log()}")
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/api/mesh", timeout=1) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> str | None:
        """SIGTERM; None if it exited 0 without a traceback, else what went wrong."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return f"qdmesh console ignored SIGTERM:\n{self.log()}"
        if code != 0 or "Traceback" in self.log():
            return f"qdmesh console exited {code}:\n{self.log()}"
        return None
