"""The collector against real router processes: files, failures and retries, missing types;
and the command lines' answers to bad input (no Spark needed here)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

from qdmesh_telemetry.collector import Collector, CollectorOptions, routermesh_addresses
from qdmesh_telemetry.entities import ENTITY_TYPES
from qdmesh_telemetry.snapshot_store import SnapshotRow, SnapshotWriter
from tests.router.routerproc import Router, router_env

pytestmark = pytest.mark.timeout(120)


def rows_under(directory: Path) -> List[dict]:
    return [json.loads(line) for path in sorted(directory.rglob("*.jsonl")) for line in path.open()]


def wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_writer_partitions_by_mesh_date_hour_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    writer = SnapshotWriter(tmp_path, prefix="m/../x")
    # 2026-11-22 06:59:59.5 and 07:00:00.5 UTC fall in two hours.
    stamps = (1795330799.5, 1795330800.5)
    written = writer.write([SnapshotRow("m/../x", "R1", "router", ts, {"id": "R1", "raw": b"\x01"})
                            for ts in stamps])
    assert [p.relative_to(tmp_path).parent.as_posix() for p in written] == [
        "mesh=m_.._x/date=2026-11-22/hour=06", "mesh=m_.._x/date=2026-11-22/hour=07"]
    assert [p.name for p in tmp_path.rglob(".*")] == []
    assert [r["ts"] for r in rows_under(tmp_path)] == list(stamps)
    assert writer.write([]) == []


def test_failing_router_is_logged_and_retried_without_stopping_the_others(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "up").mkdir()
    (tmp_path / "late").mkdir()
    up = Router(tmp_path / "up", router_id="Up").start()
    late = Router(tmp_path / "late", router_id="Late")  # its port is chosen; it starts later
    options = CollectorOptions(mesh="m", output=tmp_path / "out", interval=0.3, flush_interval=0.5,
                               timeout=2.0,
                               entity_types=(*ENTITY_TYPES, "router.nonesuch"))
    collector = Collector([up.url, late.url], options)
    caplog.set_level(logging.INFO, logger="qdmesh_telemetry.collect")
    runner = threading.Thread(target=collector.run)
    runner.start()
    try:
        wait_for(lambda: collector.pollers and list(collector.pollers.values())[1].failures >= 3, 30,
                 "three failed snapshots of the router that is down")
        # The router that is up keeps being polled while the other stays down (on a loaded
        # machine its snapshots, several queries each, may trail the quick refusals).
        up_poller = next(iter(collector.pollers.values()))
        wait_for(lambda: up_poller.snapshots >= 3 and list(collector.pollers.values())[1].snapshots == 0, 30,
                 "three snapshots of the router that is up while the other is down")
        late.start()
        wait_for(lambda: list(collector.pollers.values())[1].snapshots >= 2, 30, "snapshots once it is up")
    finally:
        collector.request_stop()
        runner.join(30)
        up.stop()
        late.stop()
    rows = rows_under(tmp_path / "out")
    assert {r["router"] for r in rows if r["entity"] == "router"} == {"Up", "Late"}
    messages = [r.getMessage() for r in caplog.records]
    assert sum("snapshot failed" in m and late.url in m for m in messages) == 1, messages
    assert sum("snapshots resumed" in m for m in messages) == 1, messages
    # A type the agent does not know is logged once per router, and recorded as no rows.
    assert sum("no router.nonesuch entities" in m for m in messages) == 2, messages
    assert not [r for r in rows if r["entity"] == "router.nonesuch"]


def test_routermesh_addresses_follow_the_kubernetes_contract() -> None:
    assert routermesh_addresses("orders", "prod", 2) == [
        "orders-0.orders-routers.prod.svc:5672", "orders-1.orders-routers.prod.svc:5672"]
    with pytest.raises(ValueError, match="size"):
        routermesh_addresses("orders", "prod", 0)


def run_module(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=60,
                          env=router_env(), stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args,needle", [
    (["--mesh", "m", "--out", "x"], "no routers"),
    (["--mesh", "m", "--out", "x", "--router", "h:1", "--interval", "0"], "--interval"),
    (["--mesh", "m", "--out", "x", "--routermesh", "m"], "--size"),
    (["--mesh", "m", "--out", "x", "--router", "h:1", "--rounds", "0"], "--rounds"),
])
def test_collect_command_names_the_bad_option(args: List[str], needle: str) -> None:
    done = run_module("qdmesh_telemetry.collect", *args)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("args,needle", [
    (["--input", "/nonexistent/snapshots", "--output", "o"],
     "no such file or directory: /nonexistent/snapshots"),
    (["--input", ".", "--output", "o", "--bucket", "0"], "--bucket"),
    (["--input", ".", "--output", "o", "--conf", "nonsense"], "--conf"),
    (["--input", ".", "--output", "o", "--format", "csv"], "--format"),
])
def test_analyse_command_names_the_bad_option(args: List[str], needle: str) -> None:
    done = run_module("qdmesh_telemetry.analyse", *args)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_collect_command_takes_the_rounds_asked_for(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    router = Router(tmp_path / "r", router_id="Solo").start()
    try:
        done = run_module("qdmesh_telemetry.collect", "--mesh", "solo", "--router", router.url,
                          "--out", str(tmp_path / "out"), "--interval", "0.3", "--rounds", "3")
    finally:
        router.stop()
    assert done.returncode == 0, done.stderr
    rows = rows_under(tmp_path / "out" / "mesh=solo")
    assert len([r for r in rows if r["entity"] == "router"]) == 3, done.stderr
    assert "Connecting to" not in done.stderr, "proton's connection chatter should stay quiet"
    assert "snapshots of 1 routers" in done.stderr
