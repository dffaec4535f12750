"""An off-by-default trace of the event loop, for attributing latency.

With ``QDROUTER_LOOP_TRACE=FILE`` in its environment the router records, for every loop turn
that did something, when it started and ended (CLOCK_MONOTONIC ns, the clock qdm-send stamps
messages with), the thread's CPU time it took, how many producers' messages it read and the
CPU time of the 0.5 s tick if it ran in it (0 if not); and every run of CPython's cyclic
garbage collector (start, end, generation, CPU time, objects collected). When the loop
stops it forces one full collection (its CPU time: what a full collection costs this
router) and writes one JSON object: ``turns`` ([start, end, cpu_ns, deliveries,
tick_cpu_ns] each), ``gc`` ([start, end, generation, cpu_ns, collected] each),
``full_collection_ns``, and two counts of objects by type taken once mid-run: ``garbage``
(the young generation's unreachable objects: the cycles the data path makes; taking it
forces one young collection, at a tick) and ``young`` (what a young generation held when it
was collected).

bench/latency_attribution.py matches a run's slowest messages to the turns that read them.
The loop tells a LoopTracer of what it does (AmqpServer.trace_with). Without the variable
nothing here runs: the loop's calls are not wrapped."""

from __future__ import annotations

import gc
import json
import os
import time
from array import array
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Protocol

TRACE_VARIABLE = "QDROUTER_LOOP_TRACE"


class LoopTracer(Protocol):
    """What the event loop tells a tracer, in this order in a turn: ``turn_starting``; its
    wait for sockets returns (``waited``); ``delivery`` before each producer's delivery it
    handles, ``tick_starting`` and ``tick_ended`` around the periodic tick if it runs;
    ``turn_ended``."""

    def turn_starting(self) -> None: ...

    def waited(self) -> None: ...

    def delivery(self) -> None: ...

    def tick_starting(self) -> None: ...

    def tick_ended(self) -> None: ...

    def turn_ended(self) -> None: ...


class TraceableLoop(Protocol):
    def trace_with(self, tracer: LoopTracer) -> None: ...


class LoopTrace:
    """Records an event loop's turns (a LoopTracer), and the cyclic collector's runs."""

    def __init__(self, path: str) -> None:
        self.path = path
        # Flat arrays of ints, not lists of lists: the trace must not feed the collector it
        # watches (a list per turn made most of the young generation's objects).
        self.turns = array("q")
        self.collections = array("q")
        self.deliveries = 0
        self.ticked = 0
        self._gc_start = self._gc_cpu = 0
        # When the turn's wait returned (monotonic), the thread's CPU time then, and when
        # the tick started (CPU).
        self._selected = self._cpu0 = self._tick_cpu = 0
        self.total = 0
        # What the young generation's unreachable objects are, once, mid-run: the cycles the
        # data path makes (each one is left for the collector instead of freed at once).
        self.garbage: Dict[str, int] | None = None
        # What a young generation holds when it is collected, once, mid-run: what lives long
        # enough to be collected and promoted.
        self.young: Dict[str, int] | None = None
        self.full_collection_ns = -1

    def install(self, loop: TraceableLoop) -> None:
        loop.trace_with(self)
        gc.callbacks.append(self._on_gc)

    # ---- LoopTracer ----------------------------------------------------------------------
    def turn_starting(self) -> None:
        # The wait inside the turn is idle, not working: the turn starts when it returns
        # (waited).
        self.deliveries = self.ticked = 0
        self._selected = 0

    def waited(self) -> None:
        self._selected, self._cpu0 = time.monotonic_ns(), time.thread_time_ns()

    def delivery(self) -> None:
        self.deliveries += 1
        self.total += 1

    def tick_starting(self) -> None:
        self._tick_cpu = time.thread_time_ns()

    def tick_ended(self) -> None:
        self.ticked = max(1, time.thread_time_ns() - self._tick_cpu)  # the tick's own CPU time (ns)
        if self.garbage is None and self.total > 20_000:
            self.garbage = self._young_garbage()

    def turn_ended(self) -> None:
        end, used = time.monotonic_ns(), time.thread_time_ns() - self._cpu0
        if self.deliveries or self.ticked or used > 200_000:
            self.turns.extend((self._selected, end, used, self.deliveries, self.ticked))

    @staticmethod
    def _young_garbage() -> Dict[str, int]:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect(0)
            return LoopTrace._count_types(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()

    @staticmethod
    def _count_types(objects: List[Any]) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for item in objects:
            name = type(item).__qualname__
            if name == "function":
                name = f"function {item.__qualname__}"
            elif name in ("tuple", "list", "dict", "cell") and len(counts) < 2000:
                name = f"{name} {repr(item)[:60]}"
            counts[name] = counts.get(name, 0) + 1
        return counts

    def _on_gc(self, phase: str, info: Dict[str, int]) -> None:
        now, used = time.monotonic_ns(), time.thread_time_ns()
        if phase == "start":
            if self.young is None and self.total > 20_000 and info.get("generation") == 0:
                self.young = self._count_types(gc.get_objects(0))
            self._gc_start, self._gc_cpu = now, used
        else:
            self.collections.extend((self._gc_start, now, info.get("generation", -1), used - self._gc_cpu,
                                     info.get("collected", 0)))

    def write(self) -> None:
        try:
            gc.callbacks.remove(self._on_gc)
        except ValueError:
            pass
        # What a full collection costs this router (CPU), forced once the traffic is over so
        # that it delays no message.
        used = time.thread_time_ns()
        gc.collect()
        self.full_collection_ns = time.thread_time_ns() - used
        with open(self.path, "w") as handle:
            turns, collections = self.turns.tolist(), self.collections.tolist()
            json.dump({"turns": [turns[i:i + 5] for i in range(0, len(turns), 5)],
                       "gc": [collections[i:i + 5] for i in range(0, len(collections), 5)],
                       "garbage": self.garbage, "full_collection_ns": self.full_collection_ns,
                       "young": self.young}, handle)


@contextmanager
def traced_if_asked(loop: TraceableLoop) -> Iterator[None]:
    """Around the event loop: traced, and the trace written when it stops, if the variable
    is set; otherwise nothing."""
    path = os.environ.get(TRACE_VARIABLE)
    if not path:
        yield
        return
    trace = LoopTrace(path)
    trace.install(loop)
    try:
        yield
    finally:
        trace.write()
