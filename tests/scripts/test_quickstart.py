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
