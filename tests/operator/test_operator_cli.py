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


def _run_without(module: str, *args: str) -> subprocess.CompletedProcess:
    """The command as a user without `module` installed runs it."""
    code = (f"import runpy, sys; sys.modules[{module!r}] = None; sys.argv[1:] = {list(args)!r}; "
            "runpy.run_module('qdmesh_operator.main', run_name='__main__')")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("module", ["kopf", "kubernetes"])
def test_without_the_operator_extra_one_line_names_it(module: str) -> None:
    done = _run_without(module)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert f"{module} not installed" in done.stderr and "pip install '.[operator]'" in done.stderr


def test_help_needs_no_extra() -> None:
    done = _run_without("kopf", "--help")
    assert done.returncode == 0 and "--namespace" in done.stdout
