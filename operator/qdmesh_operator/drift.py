"""The drift check of every RouterMesh, every ``interval`` seconds: one asyncio task per mesh
the operator watches, started when the mesh is first seen and ended when it goes (its
DELETED event, or a check that finds it gone).

kopf's own timers would do the same, but kopf puts its finalizer on every object that has a
timer (so that it can stop the timer before the object goes).  A RouterMesh needs no clean-up
by the operator (what it owns goes with it through owner references), and a finalizer on it
would keep it, and its namespace, from being deleted whenever no operator runs."""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Dict, Tuple

log = logging.getLogger("qdmesh.operator")
Key = Tuple[str, str]


class DriftSchedule:
    def __init__(self, interval: float, check: Callable[[str, str], Awaitable[bool]]) -> None:
        self.interval = interval
        self.check = check
        self._tasks: Dict[Key, asyncio.Task] = {}

    def watch(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        if key not in self._tasks:
            self._tasks[key] = asyncio.get_running_loop().create_task(self._every(key), name=f"drift {key}")

    def forget(self, namespace: str, name: str) -> None:
        task = self._tasks.pop((namespace, name), None)
        if task is not None:
            task.cancel()

    def watched(self) -> list:
        return sorted(self._tasks)

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _every(self, key: Key) -> None:
        failing = ""
        while True:
            await asyncio.sleep(self.interval)
            try:
                if not await self.check(*key):  # the mesh is gone
                    self._tasks.pop(key, None)
                    return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # logged once while it lasts, tried again next interval
                text = f"{type(e).__name__}: {e}"
                if text != failing:
                    log.warning("drift check of %s/%s failed (again in %gs): %s", *key, self.interval, text)
                failing = text
            else:
                failing = ""
