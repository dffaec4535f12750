"""The event loop's timers (amqp/wakeups/timers.py): a callback that raises is reported to the fault
boundary and the others due still run, including a periodic timer that reschedules itself."""

from __future__ import annotations

import time
from typing import List

from qdrouter.amqp.wakeups.timers import Timers


def test_a_failing_timer_is_reported_and_the_others_run() -> None:
    reports: List[str] = []
    timers = Timers(on_failure=reports.append)
    ran: List[str] = []

    def broken() -> None:
        raise RuntimeError("bug")

    timers.call_later(0, broken)
    timers.call_later(0, lambda: ran.append("after"))
    timers.run_due(time.monotonic() + 1)
    assert ran == ["after"]
    assert len(reports) == 1 and "broken" in reports[0]


def test_a_periodic_timer_that_fails_keeps_its_series() -> None:
    """The routing protocol's tick reschedules in a finally (interior/mesh_node.py): a failing run
    does not end the series."""
    reports: List[str] = []
    timers = Timers(on_failure=reports.append)
    runs: List[int] = []

    def tick() -> None:
        try:
            runs.append(len(runs))
            if len(runs) % 2:
                raise RuntimeError("every other run fails")
        finally:
            timers.call_later(100, tick)

    timers.call_later(0, tick)
    for _ in range(6):
        due = timers.next_deadline()
        assert due is not None, "the series ended"
        timers.run_due(due)  # exactly the next run: each is 100 s after the one before
    assert runs == [0, 1, 2, 3, 4, 5]
    assert len(reports) == 3
