"""Snapshot rows on disk: JSON Lines files partitioned by mesh, date and hour.

Layout: ``<root>/mesh=<mesh>/date=<YYYY-MM-DD>/hour=<HH>/<prefix>-<first ts ms>-<seq>.jsonl``.
A file is written under a dot-name in the same directory, flushed to disk and renamed into
place, so a reader (Spark ignores names starting with ``.`` or ``_``) never sees half of one.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class SnapshotRow:
    """One entity as one router's management agent reported it at ``ts`` (epoch seconds)."""

    mesh: str
    router: str
    entity: str
    ts: float
    attributes: Dict[str, Any]

    def to_json(self) -> str:
        return json.dumps({"mesh": self.mesh, "router": self.router, "entity": self.entity,
                           "ts": round(self.ts, 3), "attributes": self.attributes},
                          default=_json_fallback, separators=(",", ":"))


def _json_fallback(value: Any) -> Any:
    """Management values JSON has no type for (AMQP symbols, binary, UUIDs, timestamps)."""
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def safe_name(text: str) -> str:
    """A path component for a mesh or router name (nothing that escapes the directory)."""
    cleaned = _UNSAFE.sub("_", text).strip(".")
    return cleaned or "_"


def partition_of(mesh: str, ts: float) -> Tuple[str, str, str]:
    stamp = time.gmtime(ts)
    return (f"mesh={safe_name(mesh)}", time.strftime("date=%Y-%m-%d", stamp), time.strftime("hour=%H", stamp))


@dataclass
class SnapshotWriter:
    """Writes batches of rows under ``root``; each batch becomes one file per partition."""

    root: Path
    prefix: str = "snapshots"
    _seq: Iterator[int] = field(default_factory=count)

    def write(self, rows: List[SnapshotRow]) -> List[Path]:
        """Write ``rows``; returns the files made visible (none for no rows)."""
        groups: Dict[Tuple[str, str, str], List[SnapshotRow]] = {}
        for row in rows:
            groups.setdefault(partition_of(row.mesh, row.ts), []).append(row)
        written = []
        for parts, group in sorted(groups.items()):
            directory = self.root.joinpath(*parts)
            directory.mkdir(parents=True, exist_ok=True)
            first_ms = int(min(r.ts for r in group) * 1000)
            name = f"{safe_name(self.prefix)}-{first_ms}-{os.getpid()}-{next(self._seq)}.jsonl"
            written.append(_write_atomically(directory / name, "".join(r.to_json() + "\n" for r in group)))
        return written


def _write_atomically(path: Path, text: str) -> Path:
    temporary = path.with_name("." + path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return path
