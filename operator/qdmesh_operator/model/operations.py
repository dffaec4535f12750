"""The day-2 operations settings of a RouterMesh: its PodDisruptionBudget
(spec.disruptionBudget) and the maintenance time windows rolling restarts wait for
(spec.maintenanceTimeWindows)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List

from ..operations.windows import CronError, parse_window
from .errors import SpecError
from .fields import Fields

BUDGET_FIELDS = ("maxUnavailable", "minAvailable")
_PERCENT = re.compile(r"(100|[1-9]?[0-9])%")
MAX_WINDOWS = 16


@dataclass
class DisruptionBudget:
    """What the routers' PodDisruptionBudget says: ``key`` maxUnavailable or minAvailable,
    ``value`` a count or a percentage ("50%")."""

    key: str = "maxUnavailable"
    value: int | str = 1


def parse_disruption_budget(f: Fields) -> DisruptionBudget:
    """spec.disruptionBudget: exactly one of maxUnavailable or minAvailable; none given (or
    no disruptionBudget) is maxUnavailable 1, one router evicted at a time."""
    if not f.data:
        return DisruptionBudget()
    given = [key for key in BUDGET_FIELDS if f.has(key)]
    if len(given) != 1:
        raise SpecError(f.path, "give exactly one of maxUnavailable or minAvailable")
    key = given[0]
    value = f.data[key]
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            raise SpecError(f.at(key), f"{value!r} must be a count or a percentage such as 50%")
        return DisruptionBudget(key, value)
    number = f.integer(key, minimum=0, maximum=1000)
    assert number is not None
    return DisruptionBudget(key, number)


def parse_maintenance_windows(f: Fields) -> List[str]:
    """spec.maintenanceTimeWindows: cron expressions (operations/windows.py), each checked."""
    path = f.at("maintenanceTimeWindows")
    items = f.raw_list("maintenanceTimeWindows")
    if len(items) > MAX_WINDOWS:
        raise SpecError(path, f"must have at most {MAX_WINDOWS} items")
    holder = Fields({str(i): item for i, item in enumerate(items)}, path)
    windows: List[str] = []
    for i in range(len(items)):
        expression = holder.need_text(str(i), max_length=256)
        try:
            parse_window(expression)
        except CronError as e:
            raise SpecError(f"{path}[{i}]", f"{expression!r}: {e}") from None
        windows.append(expression)
    return windows
