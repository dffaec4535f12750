"""The test command says first what it will not cover and how to get it, and says it again
at the end (tests/conftest.py's header and summary, tests/prerequisites.py's probes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ONE_TEST = "tests/tools/test_table_format.py::test_render_dispatches_on_format"


def _run(env_extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "QDMESH_REQUIRE_ALL"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", ONE_TEST],
                          cwd=str(REPO), env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_a_missing_prerequisite_is_named_first_and_last_with_the_install_command(tmp_path: Path) -> None:
    done = _run({"QDMESH_PYPY_VENV": str(tmp_path / "no-pypy-here")})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    collected = next(i for i, line in enumerate(lines) if line.startswith("collected"))
    header, after = "\n".join(lines[:collected]), "\n".join(lines[collected:])
    for part in (header, after):
        assert "test prerequisites missing" in part and "the tests needing them skip" in part
        assert "PyPy with python-qpid-proton: tests/router/test_pypy.py (.ci/setup.d/15-pypy.sh)" in part
        assert "scripts/install-test-prerequisites" in part


def test_ci_is_told_that_missing_prerequisites_fail(tmp_path: Path) -> None:
    done = _run({"QDMESH_PYPY_VENV": str(tmp_path / "no-pypy-here"), "QDMESH_REQUIRE_ALL": "1"})
    assert "the tests needing them fail (QDMESH_REQUIRE_ALL=1)" in done.stdout


def test_the_install_command_exists_and_runs_every_setup_step() -> None:
    script = REPO / "scripts" / "install-test-prerequisites"
    assert os.access(script, os.X_OK)
    assert ".ci/setup.d/*.sh" in script.read_text()
    assert 'scripts/install-test-prerequisites "$VENV"' in (REPO / ".ci" / "run").read_text()
    assert "scripts/install-test-prerequisites" in (REPO / "README.md").read_text()
