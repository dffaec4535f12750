"""The project's behaviour tests, run against the C router (qdrouterd 1.19).

A pytest in a subprocess runs each shard of ``BEHAVIOUR_FILES`` with ``$QDROUTER_TEST_CMD`` naming
qdrouterd-c: tests/router/routerproc.py then starts the C router from each test's config
(tests/router/routerkind.py translates what it must). A test that does not pass against the
C router is marked with its reason (``qdmesh_only``: skipped; ``differs_from_c`` and
``c_router_bug``: expected to fail), and docs/routing.md lists them ("Differences from
qdrouterd"). This test fails naming every failure that no mark explains, and every marked
test that passed against the C router (its mark no longer says the truth).
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import List

import pytest

from tests.interop.cpeer import require_c_router
from tests.router.routerkind import NO_CYRUS
from tests.router.routerproc import REPO_ROOT, router_env

# The behaviour suites of one router, of meshes and of edge routers (routing, settlement and
# outcomes, annotations, flow control, dynamic addresses, address forms, link routes,
# auto-links, policy, management), chosen to take about seven minutes against the C router on
# CI's two cores. Left out: the benchmarks and qdmesh's own runtime (PyPy, the proton shim,
# soak, scale, fault containment); chaos, partitions and connector backoff (root or hooks);
# and four files sorted against the C router but run by hand with ``QDROUTER_TEST_CMD``
# because each of their tests is either marked or slow for what it adds (3.5 min together on
# a loaded two-core machine): tests/linkroute/test_broker.py (the C router aborts or hangs
# with RabbitMQ, every test marked, 80 s of RabbitMQ and timeouts), tests/mesh/test_topology.py
# (path computation on five meshes: 60 s, the mixed meshes of tests/interop cover the C router's
# paths), tests/mesh/test_protocol_addresses.py and tests/mesh/test_stop_outcomes.py (mostly
# marked: 85 s). Of the mesh files, test_remote_management.py (management across routers,
# 25 s) runs here; and every edge file (tests/edge, 20 tests in 2 minutes on a loaded
# two-core machine): the edge tests start their routers through the same ``Router`` (edge
# mode and edge connectors translate as they are), and edges had not been checked against the
# C router. The addition was measured only on a loaded machine: about 2.5 minutes there.
BEHAVIOUR_FILES = [
    "tests/router/test_basic_routing.py",
    "tests/router/test_address_forms.py",
    "tests/router/test_distribution.py",
    "tests/router/test_unavailable.py",
    "tests/router/test_dynamic_targets.py",
    "tests/router/test_outcomes.py",
    "tests/router/test_settle_modes.py",
    "tests/router/test_message_sizes.py",
    "tests/router/test_streaming_limits.py",
    "tests/router/test_streaming_paths.py",
    "tests/router/test_annotations.py",
    "tests/router/test_delivery_states.py",
    "tests/router/test_flow_control.py",
    "tests/router/test_waiting_producers.py",
    "tests/router/test_idle_timeouts.py",
    "tests/router/test_lifecycle.py",
    "tests/router/test_robustness.py",
    "tests/router/test_config_errors.py",
    "tests/management",
    "tests/linkroute/test_address_route_container.py",
    "tests/linkroute/test_detach.py",
    "tests/linkroute/test_link_names.py",
    "tests/linkroute/test_management.py",
    "tests/linkroute/test_matching.py",
    "tests/linkroute/test_route_container_totals.py",
    "tests/linkroute/test_routed_receiver.py",
    "tests/linkroute/test_routed_sender.py",
    "tests/policy",
    "tests/mesh/test_routing.py",
    "tests/mesh/test_outcomes.py",
    "tests/mesh/test_remote_management.py",
    "tests/edge",
    # Consumers that do not keep up: the memory bound both routers keep (30 s against the C router).
    "tests/hostile",
]


# The files in a few runs of their own: each has its own time limit (the whole list takes 15-20
# minutes on two cores), and in a run of the suite in one process each uses two workers, since
# its tests mostly wait on sockets and timers (in a parallel run of the suite, its worker runs
# them one after another: the other workers keep the cores busy). A file under a directory no
# prefix names runs in "other".
SHARDS = {
    "router": ("tests/router/",),
    "management-linkroute-policy": ("tests/management", "tests/linkroute/", "tests/policy"),
    "mesh-edge-hostile": ("tests/mesh/", "tests/edge", "tests/hostile"),
}


def shard_of(path: str) -> str:
    return next((name for name, prefixes in SHARDS.items() if path.startswith(prefixes)), "other")


def files_of(shard: str) -> List[str]:
    return [path for path in BEHAVIOUR_FILES if shard_of(path) == shard]


def nested_workers() -> List[str]:
    """Two workers when this run is in one process; none inside a worker of a parallel run."""
    return [] if os.environ.get("PYTEST_XDIST_WORKER") else ["-n", "2"]


def test_every_behaviour_file_runs_in_a_shard() -> None:
    assert sorted(path for shard in [*SHARDS, "other"] for path in files_of(shard)) == sorted(BEHAVIOUR_FILES)
    assert not files_of("other"), "give these files a shard in SHARDS: " + ", ".join(files_of("other"))


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("shard", list(SHARDS))
def test_behaviour_suites_against_the_c_router(tmp_path: Path, shard: str) -> None:
    binary = require_c_router()
    report = tmp_path / "c-router.xml"
    env = router_env()
    env.update(QDROUTER_TEST_CMD=str(binary), QDROUTER_TEST_KIND="c")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEX", *nested_workers(),
         f"--junitxml={report}", *files_of(shard)],
        cwd=str(REPO_ROOT), env=env, capture_output=True, text=True, timeout=1180)
    print(run.stdout[-6000:])
    assert report.exists(), ("the run against the C router wrote no report:\n"
                             + run.stdout[-4000:] + run.stderr[-2000:])
    unexplained: List[str] = []
    passed = 0
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome = {child.tag for child in case}
        if outcome & {"failure", "error"}:
            unexplained.append(name)
        elif "skipped" in outcome:
            skip = next(child for child in case if child.tag == "skipped")
            text = skip.get("message", "")
            if skip.get("type") == "pytest.xfail" or any(
                    known in text for known in ("qdmesh only", "prerequisite missing", NO_CYRUS)):
                continue
            unexplained.append(f"{name} (skipped: {text})")
        else:
            passed += 1
    # An XPASS is reported as passed in the junit file; pytest's summary names them.
    stale = [line for line in run.stdout.splitlines() if line.startswith("XPASS")]
    print(f"{passed} passed against the C router")
    assert not unexplained, ("behaviour tests failing against the C router with no mark explaining "
                             "why (docs/routing.md, \"Differences from qdrouterd\"):\n"
                             + "\n".join(unexplained) + "\n\n" + run.stdout[-8000:])
    assert not stale, "marked as failing against the C router, but passed:\n" + "\n".join(stale)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
