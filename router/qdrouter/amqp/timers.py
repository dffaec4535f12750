"""One-shot timers for the event loop (connector retries, protocol timers)."""

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
    def __init__(self) -> None:
        self._heap: List[Tuple[float, int, Timer]] = []
        self._order = itertools.count()

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
                log.exception("Timer callback failed")
