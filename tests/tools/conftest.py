"""Fixtures for the tools' tests: a real router subprocess, a scripted agent, running the commands."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

from tests.ports import free_port

from .fake_agent import FakeAgent, Responder

REPO_ROOT = Path(__file__).resolve().parents[2]
SRC = REPO_ROOT / "router"
#: Where the router under test is imported from; $QDROUTER_TEST_SRC lets the tools be tested
#: against another checkout's router (say, the last commit while the working tree is mid-change).
ROUTER_SRC = Path(os.environ.get("QDROUTER_TEST_SRC", str(SRC)))


def _env(src: Path = SRC) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH", "")) if p)
    return env


@dataclass
class RouterProcess:
    """A ``python -m qdrouter -c CONFIG.json`` subprocess with one ANONYMOUS listener."""

    workdir: Path
    router_id: str
    port: int
    proc: subprocess.Popen | None = None

    @property
    def bus(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, extra: List[Any]) -> RouterProcess:
        config = [["router", {"mode": "standalone", "id": self.router_id}],
                  ["listener", {"host": "127.0.0.1", "port": str(self.port), "saslMechanisms": "ANONYMOUS"}],
                  *extra]
        path = self.workdir / "router.json"
        path.write_text(json.dumps(config))
        with open(self.workdir / "router.log", "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "qdrouter", "-c", str(path)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         env=_env(ROUTER_SRC), cwd=str(self.workdir),
                                         start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"router exited:\n{self.log()}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"router did not listen:\n{self.log()}")

    def log(self) -> str:
        return (self.workdir / "router.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


#: Configuration entities (JSON config form) that give every qdstat view something to show.
RICH_CONFIG: List[Any] = [
    ["address", {"prefix": "closest", "distribution": "closest"}],
    ["linkRoute", {"prefix": "lr", "direction": "in"}],
    ["autoLink", {"address": "queue.first", "direction": "in", "connection": "broker"}],
    ["autoLink", {"address": "queue.first", "direction": "out", "connection": "broker"}],
    # Vhosts to show, not to enforce: with vhost policy on, the tools' own connections (to vhost
    # '127.0.0.1') would be refused, as the policy tests check.
    ["policy", {"enableVhostPolicy": False}],
    ["vhost", {"hostname": "example.com", "maxConnections": 10, "allowUnknownUser": True,
               "groups": {"admins": {"users": "alice,bob", "remoteHosts": "*", "maxSessions": 5}}}],
]


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """One router per test module (starting one costs ~1s); tests must not depend on each other's
    leftovers, so the ones that create entities delete them again."""
    r = RouterProcess(tmp_path_factory.mktemp("router"), "R1", free_port()).start(RICH_CONFIG)
    yield r
    r.stop()


@pytest.fixture
def fake_agent() -> Iterator[Callable[[Responder], FakeAgent]]:
    started: List[FakeAgent] = []

    def make(responder: Responder) -> FakeAgent:
        agent = FakeAgent(responder).start()
        started.append(agent)
        return agent

    yield make
    for agent in started:
        agent.stop()


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_tool(tool: str, *args: str, stdin: str | None = None, timeout: float = 30) -> Result:
    """Run ``python -m qdrouter.tools.TOOL ARGS`` as a user would, capturing its output."""
    proc = subprocess.run([sys.executable, "-m", f"qdrouter.tools.{tool}", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=_env())
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word (for timeouts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])
