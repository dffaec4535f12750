"""bench/placement.py's reading of `perf sched timehist`, and the router CPU figure of bench/run.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import pytest  # noqa: E402
from placement import parse_timehist, perf, summary_table, windows  # noqa: E402
from processes import BenchError, process_cpu_seconds  # noqa: E402

ROUTER_PID = 4242
HEADER = """           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
"""


def _timehist(placement: str, seconds: float = 0.5) -> str:
    """Synthetic timehist lines: 10 ms slices. "alone": the router has core 0 to itself and
    runs 7 ms in 10; the clients alternate on core 1, busy all the time. "shared": the router
    and the sender alternate on core 0, the receiver has core 1."""
    lines = [HEADER]
    t = 100.0
    for step in range(int(seconds / 0.01)):
        t += 0.01
        if placement == "alone":
            lines.append(f"{t:.6f} [0000]  python[{ROUTER_PID}]   0.000  0.000  7.000")
            client = "qdm-send[11]" if step % 2 else "qdm-recv[12]"
            lines.append(f"{t:.6f} [0001]  {client}   0.000  0.000  10.000")
        else:
            lines.append(f"{t:.6f} [0000]  python[{ROUTER_PID}]   0.000  0.000  6.000")
            lines.append(f"{t:.6f} [0000]  qdm-send[11]   0.000  0.000  4.000")
            lines.append(f"{t:.6f} [0001]  qdm-recv[12]   0.000  0.000  5.000")
        lines.append(f"{t:.6f} [0001]  kworker/1:1[77]   0.000  0.000  0.100")
    return "\n".join(lines)


def test_router_alone_with_both_clients_on_the_other_core() -> None:
    found = windows(parse_timehist(_timehist("alone"), ROUTER_PID))
    assert found, "no full 100 ms window found"
    assert {w.placement for w in found} == {"router alone (receiver+sender)"}
    assert all(abs(w.router_core_busy - 70) < 1 and abs(w.other_core_busy - 100) < 1 for w in found)
    table = summary_table(found)
    assert "| router alone (receiver+sender) | 3 | 70% | 100% |" in table


def test_router_sharing_a_core_with_the_sender() -> None:
    found = windows(parse_timehist(_timehist("shared"), ROUTER_PID))
    assert {w.placement for w in found} == {"router+sender (receiver)"}
    assert all(abs(w.router_core_busy - 100) < 1 and abs(w.other_core_busy - 50) < 1 for w in found)


def test_other_processes_and_headers_are_not_counted() -> None:
    slices = parse_timehist(_timehist("alone", 0.05), ROUTER_PID)
    assert {s.task for s in slices} == {"router", "sender", "receiver"}


def test_process_cpu_seconds_grows_with_use_and_is_none_for_a_gone_process() -> None:
    before = process_cpu_seconds(os.getpid())
    assert before is not None
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    after = process_cpu_seconds(os.getpid())
    assert after is not None and after - before >= 0.2
    child = subprocess.Popen(["true"])
    child.wait()
    assert process_cpu_seconds(child.pid) is None


def test_a_slice_across_window_edges_is_split_between_the_windows() -> None:
    # The router runs 450 ms without a break on core 0; the clients alternate on core 1.
    lines = [HEADER, f"100.450000 [0000]  python[{ROUTER_PID}]   0.000  0.000  450.000"]
    for step in range(45):
        client = "qdm-send[11]" if step % 2 else "qdm-recv[12]"
        lines.append(f"{100.01 + step * 0.01:.6f} [0001]  {client}   0.000  0.000  10.000")
    found = windows(parse_timehist("\n".join(lines), ROUTER_PID))
    assert len(found) == 3  # 0.0-0.1 s and 0.4-0.45 s are the partial windows at the ends
    assert all(abs(w.router_core_busy - 100) < 1 for w in found)


def test_a_failing_perf_is_reported_with_what_it_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "perf"  # a stand-in that fails as perf does without the right to trace
    fake.write_text(
        '#!/bin/sh\necho "Error: No permission to enable sched:sched_switch event." >&2\nexit 255\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(BenchError) as failure:
        perf(["record", "-o", str(tmp_path / "x.data"), "--", "sleep", "0"])
    message = str(failure.value)
    assert "perf sched record failed (exit code 255)" in message
    assert "No permission to enable sched:sched_switch" in message
    assert "perf_event_paranoid" in message
