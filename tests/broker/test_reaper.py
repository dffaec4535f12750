"""Stopping a test run, however it is stopped, leaves nothing it started running.

Runs tests/broker/hold_processes.py (a RabbitMQ node, its epmd, two routers) in a pytest of
its own, stops that pytest as a user or a CI runner would (Ctrl-C, SIGTERM, SIGKILL, or a
pytest-timeout that ends the process), and
checks that every process the run had started has ended within a bounded time
(tests/reaper.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Set

import pytest

from tests import reaper
from tests.prerequisites import require

from .rabbit import missing_reason

REPO = Path(__file__).resolve().parents[2]


def _started_by(report: dict, inner_pid: int) -> Set[reaper.Proc]:
    return reaper.descendants(inner_pid) | reaper.marked(report["run"])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "sigkill", "timeout"])
def test_stopped_run_leaves_nothing(tmp_path: Path, how: str) -> None:
    require(missing_reason() is None, missing_reason() or "")
    report_file = tmp_path / "hold.json"
    env = dict(os.environ, QDMESH_HOLD_REPORT=str(report_file))
    if how == "timeout":
        # Long enough for the broker and routers to start on a loaded machine, then
        # pytest-timeout's thread method dumps the stacks and ends pytest with os._exit(1).
        env.update(QDMESH_HOLD_TIMEOUT="45", QDMESH_HOLD_TIMEOUT_METHOD="thread")
    log = open(tmp_path / "inner.log", "wb")
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/broker/hold_processes.py",
         "--basetemp", str(tmp_path / "inner")],
        cwd=str(REPO), env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not report_file.exists() and inner.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert report_file.exists(), (tmp_path / "inner.log").read_text(errors="replace")[-3000:]
        time.sleep(0.2)
        report = json.loads(report_file.read_text())
        started = _started_by(report, inner.pid)
        pids = {pid for pid, _ in started}
        assert {report["broker"], *report["routers"]} <= pids, "the inner run's processes were not found"

        if how == "ctrl-c":
            os.killpg(inner.pid, signal.SIGINT)       # the terminal signals the foreground group
            bound = 60.0                               # fixtures stop the broker cleanly
        elif how == "sigterm":
            inner.send_signal(signal.SIGTERM)
            bound = 60.0
        elif how == "sigkill":
            inner.send_signal(signal.SIGKILL)          # no teardown: the watchdog's job
            bound = 30.0
        else:
            bound = 90.0                               # the timeout fires by itself
        inner.wait(timeout=bound)
        if how == "timeout":
            assert "Timeout" in (tmp_path / "inner.log").read_text(errors="replace")
            bound = 30.0                               # os._exit: the watchdog's job too
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline and (any(reaper._alive(p) for p in started)
                                               or reaper.marked(report["run"])):
            time.sleep(0.2)
        left = sorted(pid for pid, _ in started if reaper._alive((pid, _)))
        assert not left, f"after {how}, still running: {left}"
        assert not reaper.marked(report["run"]), f"after {how}, processes carrying the run's marker remain"
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait()
        log.close()
