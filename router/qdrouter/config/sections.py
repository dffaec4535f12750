"""What the two config syntaxes parse into, before any schema checking."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple


class LinedDict(Dict[str, object]):
    """A map read from config text that remembers the line each key was written on."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[str, int] = {}


@dataclass
class RawEntry:
    key: str
    value: object
    line: int | None


@dataclass
class RawSection:
    name: str
    line: int | None
    entries: List[RawEntry] = field(default_factory=list)

    def items(self) -> list[Tuple[str, object]]:
        return [(e.key, e.value) for e in self.entries]

