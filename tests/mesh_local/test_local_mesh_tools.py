"""A mesh from `qdmesh local` with its metrics listeners and console (--metrics-port,
--console-port), and what the tools say about it."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from .test_local_mesh_command import READY_TIMEOUT, REPO_ROOT, MeshCommand, router_pids

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeshCommand]:
    log_dir = tmp_path_factory.mktemp("local-tools")
    command = MeshCommand(["--routers", "2", "--metrics-port", "0", "--console-port", "0"], log_dir)
    try:
        command.wait_for(r"ready", READY_TIMEOUT)
        yield command
    finally:
        if command.proc.poll() is None:
            command.proc.send_signal(signal.SIGINT)
            command.proc.wait(30)
        for pid in router_pids(str(log_dir)):
            os.kill(pid, signal.SIGKILL)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read().decode()


def _tool(tool: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT / "router"), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", f"qdrouter.tools.{tool}", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def test_each_router_serves_metrics_where_the_command_says(mesh: MeshCommand) -> None:
    found = (re.search(r"metrics: (http://\S+/metrics)", line) for line in mesh.seen)
    urls = [m.group(1) for m in found if m]
    assert len(urls) == 2, mesh.seen
    for router_id, url in zip(["R1", "R2"], urls):
        assert f'qdmesh_router_info{{router="{router_id}",mode="interior"' in _get(url)
        assert _get(url.replace("/metrics", "/healthz")).startswith("ok")


def test_console_shows_both_routers(mesh: MeshCommand) -> None:
    line = next(line for line in mesh.seen if "console: http://" in line)
    base = re.search(r"(http://\S+/)", line).group(1)   # type: ignore[union-attr]
    assert "<html" in _get(base).lower()
    deadline = time.monotonic() + 30
    view: Dict[str, Any] = {}
    while time.monotonic() < deadline:      # the console polls the mesh every 2 s
        view = json.loads(_get(base + "api/mesh"))
        if sorted(r["id"] for r in view.get("routers", []) if r.get("reachable")) == ["R1", "R2"]:
            return
        time.sleep(0.5)
    raise AssertionError(f"the console never showed R1 and R2: {view}")


def test_map_is_titled_by_the_router_asked(mesh: MeshCommand) -> None:
    done = _tool("qdstat", "-b", mesh.addresses()["R1"], "--map")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Mesh of router R1: 2 of 2 routers answered"
    assert "RouterMesh" not in done.stdout


def test_unknown_router_is_named_at_once(mesh: MeshCommand) -> None:
    started = time.monotonic()
    done = _tool("qdstat", "-b", mesh.addresses()["R1"], "-r", "R9", "-l", "--timeout", "20")
    took = time.monotonic() - started
    assert done.returncode == 1
    assert "no router 'R9' in the mesh of the router at" in done.stderr and "(it knows R1, R2)" in done.stderr
    assert took < 10, f"took {took:.1f}s: waited for the timeout"
    # A router the mesh knows still answers through -r.
    done = _tool("qdstat", "-b", mesh.addresses()["R1"], "-r", "R2", "-g")
    assert done.returncode == 0 and "R2" in done.stdout, done.stderr


def test_misspelt_entity_type_gets_a_suggestion(mesh: MeshCommand) -> None:
    done = _tool("qdmanage", "-b", mesh.addresses()["R1"], "query", "--type", "listner")
    assert done.returncode == 1
    assert "unknown entity type 'listner' (did you mean 'listener'?)" in done.stderr


def test_json_empty_cells_are_null(mesh: MeshCommand) -> None:
    done = _tool("qdstat", "-b", mesh.addresses()["R1"], "-a", "--json")
    rows: List[Dict[str, Any]] = json.loads(done.stdout)
    local = [row for row in rows if row["class"] == "local"]
    assert local and all(row["phs"] is None for row in local)
    assert not any(value == "" for row in rows for value in row.values())


def test_busy_console_port_is_an_error_that_stops_the_routers(tmp_path: Path) -> None:
    import socket
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        command = MeshCommand(["--routers", "1", "--console-port", str(busy.getsockname()[1])], tmp_path)
        assert command.proc.wait(READY_TIMEOUT) == 1
        assert command.proc.stderr is not None
        assert "cannot serve the console on 127.0.0.1:" in command.proc.stderr.read()
    assert router_pids(str(tmp_path)) == []


def test_the_printed_watch_command_runs_without_the_venv_on_path(mesh: MeshCommand) -> None:
    # What a user copies from the output, in a shell where the virtualenv is not activated.
    line = next(line for line in mesh.seen if "watch:" in line and line.split()[0] == "R2")
    command = shlex.split(line.split("watch:", 1)[1])
    assert command[-3:] == ["-b", mesh.addresses()["R2"], "-n"], command
    assert os.path.isabs(command[0]), command  # a full path, not a bare name PATH may lack
    env = dict(os.environ, PATH="/usr/bin:/bin")
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 0, done.stderr
    assert "R1" in done.stdout and "R2" in done.stdout, done.stdout
