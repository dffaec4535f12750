"""Config errors, worded for the person who has to fix the file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a config file: where, in which entity, and what."""

    source: str
    line: int | None
    entity: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.entity}: {self.message}" if self.entity else f"{where}: {self.message}"


class ConfigError(Exception):
    """The config could not be used.  str(error) is the complete message, one problem a line."""

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, source: str, line: int | None, message: str,
           entity: str | None = None) -> ConfigError:
        return cls([ConfigProblem(source, line, entity, message)])
