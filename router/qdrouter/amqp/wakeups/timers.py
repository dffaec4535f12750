"""One-shot timers for the event loop (connector retries, protocol timers).

A callback that raises is reported (the fault boundary logs and counts it) and the others
run. A periodic timer reschedules itself in a ``finally`` (interior/mesh_node.py's tick) so that a
failure of one run does not end the series."""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from typing import Callable, List, Tuple

log = logging.getLogger("qdrouter.SERVER")


class Timer:
    __slots__ = ("callback", "cancelled", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    def __init__(self, on_failure: Callable[[str], None] | None = None) -> None:
        self._heap: List[Tuple[float, int, Timer]] = []
        self._order = itertools.count()
        # Called inside the except block with what was being done (it logs the traceback).
        self._on_failure = on_failure

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(time.monotonic() + delay, callback)
        heapq.heappush(self._heap, (timer.deadline, next(self._order), timer))
        return timer

    def next_deadline(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def run_due(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, timer = heapq.heappop(heap)
            if timer.cancelled:
                continue
            try:
                timer.callback()
            except Exception:  # one failing timer must not stop the loop
                if self._on_failure is not None:
                    name = getattr(timer.callback, "__qualname__", timer.callback)
                    self._on_failure(f"running timer {name!r}")
                else:
                    log.exception("Timer callback failed")
