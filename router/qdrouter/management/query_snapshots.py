"""The table a paged QUERY walks, kept while its pages are asked for.

A client pages through a large table with QUERY's offset and count (qdstat and qdmanage ask
500 rows at a time, as qdrouterd's own tools do). Building a table costs the same whatever
slice of it is sent, so a walk of N rows built afresh for every page would cost N/500 whole
tables: 40 for 20,000 addresses. The first page (offset 0, a count smaller than the table)
keeps the table's projected rows; a later page (offset > 0) of the same entity type and
attribute names, asked within SNAPSHOT_S, is cut from them. A walk thus reads one snapshot,
whose rows do not shift between pages as entities come and go.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Callable, List, Tuple

SNAPSHOT_S = 10.0
# Walks in progress at once (distinct entity type and attribute names); the oldest goes first.
MAX_SNAPSHOTS = 8

Key = Tuple[Any, Tuple[str, ...]]


class QuerySnapshots:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tables: OrderedDict[Key, Tuple[float, List[List[Any]]]] = OrderedDict()

    def results(self, key: Key, offset: int, count: int | None,
                build: Callable[[], List[List[Any]]]) -> List[List[Any]]:
        """Rows ``offset`` to ``offset + count`` (to the end when count is None) of the table
        ``build`` makes, from the walk's snapshot when there is one."""
        now = self._clock()
        table = None
        if offset > 0:
            kept = self._tables.get(key)
            if kept is not None and now - kept[0] <= SNAPSHOT_S:
                table = kept[1]
        if table is None:
            table = build()
            if count is not None and offset + count < len(table):
                self._tables[key] = (now, table)  # more pages to come
                self._tables.move_to_end(key)
                while len(self._tables) > MAX_SNAPSHOTS:
                    self._tables.popitem(last=False)
            else:
                self._tables.pop(key, None)
        return table[offset:offset + count] if count is not None else table[offset:]
