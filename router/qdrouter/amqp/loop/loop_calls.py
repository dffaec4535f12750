"""The event loop's calls a tracer may watch (AmqpServer.trace_with, tuning/loop_trace.py):
its turn, its wait for sockets, the delivery handler and the tick, wrapped so that the
tracer hears of each. Untraced, the loop calls the originals and pays nothing."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ...tuning.loop_trace import LoopTracer


class LoopCalls(NamedTuple):
    turn: Callable[[], None]
    wait: Callable[[float], Any]
    on_delivery: Callable[..., None]
    tick: Callable[[float], None]


def traced(tracer: LoopTracer, calls: LoopCalls) -> LoopCalls:
    """``calls``, each telling ``tracer`` of itself."""
    turn, wait, on_delivery, tick = calls

    def traced_turn() -> None:
        tracer.turn_starting()
        turn()
        tracer.turn_ended()

    def traced_wait(timeout: float) -> Any:
        ready = wait(timeout)
        tracer.waited()
        return ready

    def traced_delivery(*args: Any) -> None:
        tracer.delivery()
        on_delivery(*args)

    def traced_tick(now: float) -> None:
        tracer.tick_starting()
        tick(now)
        tracer.tick_ended()

    return LoopCalls(traced_turn, traced_wait, traced_delivery, traced_tick)
