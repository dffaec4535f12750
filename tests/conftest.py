"""Fixtures every test folder may use. The Kubernetes control plane (etcd + kube-apiserver,
with controller-manager and scheduler for kube_control_plane) is session-wide: defined once
here, one instance serves the kube, operator, kubectl and gitops tests of a run."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

_REPO_ROOT = str(Path(__file__).resolve().parents[1])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from tests import parallel, reaper  # noqa: E402
from tests.kube.apiserver import kube_apiserver, kube_control_plane  # noqa: E402, F401 (shared fixtures)
from tests.prerequisites import INSTALL_COMMAND, missing_prerequisites  # noqa: E402
from tests.router.routerkind import apply_marks  # noqa: E402
from tests.router.routerproc import build_proton_shim  # noqa: E402

_run_id = ""
_missing: List[Tuple[str, str, str]] = []


def _terminate(signum: int, frame: Any) -> None:
    # SIGTERM as Ctrl-C: pytest then tears fixtures down (stopping their routers and brokers)
    # and ends the session, where the reaper stops whatever is left.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    parallel.claim_ports(config)   # before any fixture picks one (tests/ports.py)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Ctrl-C during a test's setup leaves pytest's tmp_path teardown without the results it
    # reads (a KeyError from pytest's stash that buries the run's summary): give it an empty
    # record up front. (pytest's own key; nothing to do if a later pytest renames it.)
    try:
        from _pytest.tmpdir import tmppath_result_key
    except ImportError:
        return
    item.stash.setdefault(tmppath_result_key, {})


def pytest_report_header(config: pytest.Config) -> List[str]:
    # Said first, so that a run stopped early has still said what it will not cover.
    _missing[:] = missing_prerequisites()
    return _missing_lines()


def _missing_lines() -> List[str]:
    # The end-to-end suite needs a whole cluster: CI runs it on its own, after this command.
    e2e = ["tests/e2e skips here (it needs a cluster): tests/e2e/run.sh runs it (docs/e2e.md)"]
    if os.environ.get("QDMESH_E2E") == "1":
        e2e = []
    if not _missing:
        return ["test prerequisites: all installed (nothing skips for want of one)", *e2e]
    how = "fail (QDMESH_REQUIRE_ALL=1)" if os.environ.get("QDMESH_REQUIRE_ALL") == "1" else "skip"
    lines = [f"test prerequisites missing ({len(_missing)}): the tests needing them {how}"]
    lines += [f"  - {what}: {tests} (.ci/setup.d/{step})" if step.endswith(".sh")
              else f"  - {what}: {tests} ({step})" for what, tests, step in _missing]
    lines.append(f"  install them all (Debian/Ubuntu, root or sudo): {INSTALL_COMMAND}")
    return lines + e2e


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.section("test prerequisites")
    for line in _missing_lines():
        terminalreporter.write_line(line)


def pytest_sessionstart(session: pytest.Session) -> None:
    global _run_id
    # First: every process the run starts from here on carries the run's marker (tests/reaper.py).
    # A parallel run's workers are covered by its watchdog (they carry its marker too).
    _run_id = reaper.start_run(watchdog=not parallel.is_worker(session.config))
    # Every folder starts routers from this checkout with this interpreter: give them the
    # compiled proton shim, as an installed router has.
    build_proton_shim()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: object) -> None:
    # However the run ends (Ctrl-C and SIGTERM included), nothing it started outlives it. Last:
    # session-scoped fixtures (meshes, brokers) are torn down before, by pytest's own hook, and
    # must find their processes still running. Should that teardown raise, this is not called:
    # pytest_unconfigure then, or the watchdog once pytest has exited, does the same.
    _finish()


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # Workers take whole groups (tests/parallel.py), longest first.
    if config.getvalue("dist") not in ("loadfile", "loadgroup"):
        return None
    return parallel.make_scheduler(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    _finish()


def _finish() -> None:
    global _run_id
    run_id, _run_id = _run_id, ""
    reaper.finish_run(run_id)


# Per folder: a hung router, broker, client or cluster must fail its test, never hang the run.
# A test's own timeout marker wins. They guard against hangs, not slowness: about twice the
# longest test of the folder on two workers of a loaded two-core machine, so a slow machine
# does not turn a passing test into a failure.
FOLDER_TIMEOUTS_S: Dict[str, int] = {
    "management": 60,
    "router": 120, "tools": 120, "linkroute": 120, "policy": 120,
    "mesh": 180, "mesh_local": 180, "edge": 180, "router_http": 180, "security": 180,
    "mesh_linkroute": 240, "interop": 360,
    "console": 300,
    "broker": 360,
    "e2e": 600,
    "telemetry": 900,
}
_TESTS_DIR = Path(__file__).resolve().parent


# First: pytest-xdist reads the groups (tests/parallel.py) from the marks set here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    apply_marks(items)  # qdmesh_only / differs_from_c / c_router_bug, against the C router
    parallel.assign_groups(items)
    parallel.order_longest_first(config, items)
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        try:
            folder = Path(str(item.fspath)).resolve().relative_to(_TESTS_DIR).parts[0]
        except ValueError:
            continue
        seconds = FOLDER_TIMEOUTS_S.get(folder)
        if seconds is not None:
            item.add_marker(pytest.mark.timeout(seconds))
