"""One lock per key (a mesh), held only while someone uses it: the entry goes with its last
user, so the operator keeps no lock for a mesh it is not reconciling (a cluster's meshes come
and go; a lock per mesh ever seen would only grow)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Dict, Generic, Hashable, Iterator, List, TypeVar

K = TypeVar("K", bound=Hashable)


class KeyedLocks(Generic[K]):
    def __init__(self) -> None:
        self._guard = threading.Lock()
        # The lock and how many threads hold it or wait for it.
        self._entries: Dict[K, List] = {}

    @contextmanager
    def hold(self, key: K) -> Iterator[None]:
        with self._guard:
            entry = self._entries.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        lock: threading.Lock = entry[0]
        try:
            with lock:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._entries[key]

    def __len__(self) -> int:
        """Keys in use now (held or waited for)."""
        with self._guard:
            return len(self._entries)
