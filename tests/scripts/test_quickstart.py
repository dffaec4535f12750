"""scripts/quickstart's command line: its help, a mistake refused in one line, and a machine
without the tools it needs told which ones are missing, before anything starts."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "scripts" / "quickstart"


def run(*args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=path) if path is not None else None
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run([bash, str(QUICKSTART), *args], capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL)


def test_help_says_what_it_does_and_how_to_undo_it() -> None:
    done = run("--help")
    assert done.returncode == 0
    for words in ("--down", "--local-node-image", "kind", "docs/examples/quickstart.yaml", "kubectl qdstat"):
        assert words in done.stdout, words


def test_an_unknown_argument_is_one_line() -> None:
    done = run("--bogus")
    assert done.returncode == 2
    assert done.stderr.strip() == "quickstart: unknown argument: --bogus (see --help)"


def test_missing_tools_are_named_with_where_to_get_them(tmp_path: Path) -> None:
    # A PATH with only the shell's basic commands: no docker, kind, kubectl, helm or python3.
    for tool in ("sed", "head", "dirname", "date", "cat", "tr", "grep"):
        found = shutil.which(tool)
        assert found, tool
        (tmp_path / tool).symlink_to(found)
    done = run(path=str(tmp_path))
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert first == ("quickstart: not installed (or not on PATH): docker kind kubectl helm python3. "
                     "Get them from")
    assert "https://kind.sigs.k8s.io/" in done.stderr and "Traceback" not in done.stderr


def test_a_failed_step_is_named_with_its_output_and_the_command_that_shows_why(tmp_path: Path) -> None:
    # Stand-ins for the tools: images present, no cluster yet, and kind failing to create one.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sed", "head", "dirname", "date", "cat", "tr", "grep", "tail", "mkdir", "rm"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    stubs = {"docker": "exit 0", "kubectl": "exit 0", "helm": "exit 0", "python3": "exit 0",
             "kind": 'if [ "$1" = create ]; then echo "ERROR: failed to create cluster: no node image" >&2; '
                     "exit 1; fi; exit 0"}
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    env_home = tmp_path / "home"
    done = subprocess.run([shutil.which("bash") or "/bin/bash", str(QUICKSTART)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env={"PATH": str(bin_dir), "HOME": str(env_home)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "images qdmesh/{router,operator,e2e-broker}:" in done.stdout and "done in" in done.stdout
    assert "quickstart: step failed after" in done.stderr and ": kind cluster qdmesh" in done.stderr
    assert "ERROR: failed to create cluster: no node image" in done.stderr  # the step's own output
    assert "quickstart: to see why: kind get clusters" in done.stderr
    assert "chart installed" not in done.stdout  # nothing runs after a failed step
