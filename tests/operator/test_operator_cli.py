"""``qdmesh-operator``: its options, scope, and clear errors for bad arguments (no traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from qdmesh_operator.main import parse_args


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "qdmesh_operator.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_help_lists_scope_and_ports() -> None:
    done = run("--help")
    assert done.returncode == 0
    for word in ("--namespace", "--all-namespaces", "--health-port", "--metrics-port", "--drift-interval"):
        assert word in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "a", "-A"], "not allowed with argument"),
        (["--health-port", "70000"], "--health-port: 70000 is not a port number"),
        (["--drift-interval", "0"], "--drift-interval must be a positive number"),
        (["--log-level", "loud"], "invalid choice: 'loud'"),
    ],
)
def test_bad_arguments_are_named_without_a_traceback(args: list, message: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_bad_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDMESH_LOG_LEVEL", "chatty")
    with pytest.raises(SystemExit):
        parse_args([])


def test_namespaces_repeat_and_log_level_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDMESH_LOG_LEVEL", "DEBUG")
    args = parse_args(["-n", "a", "-n", "b"])
    assert args.namespace == ["a", "b"] and args.log_level == "debug" and not args.all_namespaces
