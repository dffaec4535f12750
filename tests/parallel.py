"""How the suite shares a machine with itself when run by several workers (pytest-xdist).

``pytest -n 4`` runs the suite on workers (``--dist loadfile`` and
``--no-loadscope-reorder`` come from pyproject's addopts). Most tests wait on sockets, timers
and subprocesses, so four workers keep two cores busy. This module decides, for every test:

- **its group** (an ``xdist_group`` mark: one worker runs a whole group, one test after
  another). A test without a group below is grouped with its file, so a file's module-scoped
  fixtures (meshes, operators, brokers) start once, as in a serial run. ``SERIAL_GROUPS``
  gathers files that must not run beside each other, each with its reason.
- **its order**: the scheduler hands out groups in collection order, so the longest groups
  go first (``SLOW_SECONDS``) and the short ones fill in at the end; a long group handed out
  last would keep one worker busy after the others are done.

What each worker must not share with another is kept apart elsewhere: ports
(tests/ports.py, one slice of the pool per worker), temporary directories (pytest's own, one
per worker), brokers, API servers and Spark (session fixtures: one per worker that needs
them, on its own ports and directories), and the run's processes (tests/reaper.py: each
worker is a run of its own, nested in the parallel run)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from tests import ports

_TESTS_DIR = Path(__file__).resolve().parent

# The group the scheduler holds back until every other test has run: it runs alone.
ALONE = "alone"

# Group -> (paths under tests/, why these run one after another on one worker).
SERIAL_GROUPS: Dict[str, Tuple[List[str], str]] = {
    "cpu-heavy": ([
        "interop/test_behaviour_c.py",
        "interop/test_generated_meshes.py",
    ], "each keeps a core busy for minutes (a nested suite against the C router; mixed and "
       "all-C meshes of up to eight routers under traffic side by side): two at once would "
       "starve every other worker's timers"),
    ALONE: ([
        "router/test_soak.py",
        "router/test_scale.py",
        "hostile",
    ], "they measure the router at full load (churn rates, 10,000 connections and 100,000 "
       "addresses with round trips under 50 ms, memory under floods): run last, when every "
       "other worker is done, they see the machine as a serial run does"),
    "spark": ([
        "telemetry",
    ], "one Spark JVM (local[2], a session fixture) serves every telemetry test; a second "
       "worker would start a second JVM of 1-2 GB and two more busy cores"),
}

# Seconds a file or group took in a parallel run on a loaded two-core machine: the order in
# which groups are handed out (longest first). Files not named are short.
SLOW_SECONDS: Dict[str, float] = {
    "cpu-heavy": 1200,
    "spark": 300,
}


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scheduler with ``group_of`` as its unit of work. Not xdist's own
    ``loadgroup``: it reads groups from a suffix it puts on each test's id, which pytest 9
    no longer reports (test ids come from ``Node.nodeid``), so every test would go out on its
    own. Groups here are found from the test's path alone, the same on every worker."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return group_of(path[len("tests/"):] if path.startswith("tests/") else path)

        def _reschedule(self, node: Any) -> None:
            # The ALONE group (last in the queue) goes to the last worker still busy, once
            # every worker is down to the one test it holds (a worker runs its last test only
            # when told there is no more); the others are told so then, and stop.
            if not node.shutting_down and list(self.workqueue) == [ALONE]:
                others = [n for n in self.assigned_work if n is not node and not n.shutting_down]
                if any(self._pending_of(self.assigned_work[n]) > 1 for n in [node, *others]):
                    return
                for other in others:
                    other.shutdown()
            super()._reschedule(node)

    return GroupScheduling(config, log)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def claim_ports(config: pytest.Config) -> None:
    """This process's share of the port pool (tests/ports.py): worker N of K takes slice N."""
    if is_worker(config):
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").lstrip("gw") or 0)
        # One slice more than workers: a worker that replaces a crashed one is numbered on
        # (gw4 of 4) and takes that spare slice, since the crashed one's may still be in use.
        ports.claim(min(worker, workers), workers + 1)
    elif not getattr(config.option, "numprocesses", None):
        ports.claim()      # a serial run (its workers, if any, divide the pool it leaves whole)


def _relative(item: pytest.Item) -> str:
    try:
        return Path(str(item.fspath)).resolve().relative_to(_TESTS_DIR).as_posix()
    except ValueError:
        return str(item.fspath)


def group_of(path: str) -> str:
    for group, (prefixes, _why) in SERIAL_GROUPS.items():
        if any(path == prefix or path.startswith(prefix.rstrip("/") + "/") for prefix in prefixes):
            return group
    return path


def assign_groups(items: List[pytest.Item]) -> None:
    """Mark each test with its group (an explicit ``xdist_group`` mark wins)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group_of(_relative(item))))


def order_longest_first(config: pytest.Config, items: List[pytest.Item]) -> None:
    """In a worker, sort groups longest first (stable: a file's tests keep their order)."""
    if not is_worker(config):
        return

    def weight(item: pytest.Item) -> float:
        mark = item.get_closest_marker("xdist_group")
        group = str(mark.args[0]) if mark is not None and mark.args else _relative(item)
        return float("inf") if group == ALONE else -SLOW_SECONDS.get(group, 0.0)

    items.sort(key=weight)
