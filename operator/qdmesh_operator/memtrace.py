"""Where the operator's memory goes, on request: with $QDMESH_TRACEMALLOC naming a directory,
each SIGUSR2 writes a tracemalloc snapshot there (``<pid>-<n>.snapshot``, then an empty
``<pid>-<n>.snapshot.done``), to be compared with ``tracemalloc.Snapshot.load`` and
``compare_to`` (bench/operator_soak.py and the operator's memory test do).  Tracing starts at
the first signal, not at start-up: it makes every allocation several times dearer, and what
grows is what is allocated after the operator has settled."""

from __future__ import annotations

import itertools
import logging
import os
import signal
import tracemalloc
from pathlib import Path
from typing import Any

log = logging.getLogger("qdmesh.operator")
ENV = "QDMESH_TRACEMALLOC"
#: Frames kept per allocation: enough to see which of the operator's callers made it.
FRAMES = 12


def install() -> Path | None:
    """Snapshots on SIGUSR2 (the first starts tracing) when $QDMESH_TRACEMALLOC is set."""
    directory = os.environ.get(ENV, "").strip()
    if not directory:
        return None
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    counter = itertools.count(1)

    def dump(_signum: int, _frame: Any) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(FRAMES)
        path = target / f"{os.getpid()}-{next(counter)}.snapshot"
        tracemalloc.take_snapshot().dump(str(path))
        # Written last: whoever waits for the snapshot waits for this name.
        (target / f"{path.name}.done").touch()
        log.warning("tracemalloc snapshot written to %s", path)

    signal.signal(signal.SIGUSR2, dump)
    return target
