"""Small process helpers for the private control plane: free ports, a logged child process."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import IO, Callable, List, Sequence

from tests.ports import free_port  # noqa: F401 (re-exported)


class LoggedProcess:
    """A child process whose stdout and stderr go to ``log``; ``stop`` ends it for sure."""

    def __init__(self, name: str, argv: Sequence[str], log: Path) -> None:
        self.name = name
        self.argv: List[str] = list(argv)
        self.log = log
        self._log_file: IO[bytes] = open(log, "wb")
        self.process = subprocess.Popen(self.argv, stdout=self._log_file, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=grace)
        self._log_file.close()


def wait_until(check: Callable[[], bool], timeout: float, what: str,
               watched: Sequence[LoggedProcess] | None = None, interval: float = 0.25) -> None:
    """Poll ``check`` until it is true; fail early, with its log, if a watched process dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in watched or ():
            if not proc.alive():
                raise RuntimeError(f"{proc.name} exited with {proc.process.returncode} while waiting "
                                   f"for {what}; last lines of {proc.log}:\n{proc.log_tail()}")
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(interval)
    tails = "\n".join(f"--- {p.name} ({p.log}):\n{p.log_tail()}" for p in watched or ())
    raise TimeoutError(f"{what} not reached within {timeout:.0f} s\n{tails}")
