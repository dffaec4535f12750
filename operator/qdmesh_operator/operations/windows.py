"""Maintenance time windows (spec.maintenanceTimeWindows): cron expressions; a time is inside
a window when its minute matches the expression, in UTC (as Strimzi reads its windows).

Two forms are read:

- cron's five fields: ``minute hour day-of-month month day-of-week``
  (``* 0-1 * * SAT,SUN``: every minute of 00:00-01:59 on Saturdays and Sundays);
- Strimzi's Quartz form, six or seven fields: ``second minute hour day-of-month month
  day-of-week [year]`` (``* * 0-1 ? * SUN,SAT``).  The seconds field is read but a window
  is matched to the minute; day-of-week numbers are Quartz's 1-7 (1 is Sunday).

Each field is ``*``, ``?`` (as ``*``), a number or a name (JAN-DEC, SUN-SAT), a range ``a-b``,
a step ``*/n`` or ``a-b/n`` or ``a/n``, or a list of those separated by commas.  When both
day-of-month and day-of-week are restricted, a day matching either is in (cron's rule).
Quartz's ``L``, ``W`` and ``#`` are refused."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import FrozenSet, Sequence

MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


class CronError(ValueError):
    """A maintenance window that is not a cron expression this parser reads."""


@dataclass(frozen=True)
class Window:
    minutes: FrozenSet[int]
    hours: FrozenSet[int]
    days: FrozenSet[int]
    months: FrozenSet[int]
    weekdays: FrozenSet[int]  # 0 is Sunday
    years: FrozenSet[int] | None
    days_restricted: bool
    weekdays_restricted: bool

    def contains(self, when: dt.datetime) -> bool:
        when = when.astimezone(dt.timezone.utc)
        if when.minute not in self.minutes or when.hour not in self.hours or when.month not in self.months:
            return False
        if self.years is not None and when.year not in self.years:
            return False
        weekday = (when.weekday() + 1) % 7  # Python's Monday 0 -> cron's Sunday 0
        day_ok, weekday_ok = when.day in self.days, weekday in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok


def _value(text: str, low: int, high: int, names: Sequence[str], offset: int, what: str) -> int:
    upper = text.upper()
    if names and upper in names:
        return names.index(upper) + offset
    if not text.isdigit():
        named = f" nor one of {','.join(names)}" if names else ""
        raise CronError(f"{what}: {text!r} is not a number{named}")
    value = int(text)
    if not low <= value <= high:
        raise CronError(f"{what}: {value} is outside {low}-{high}")
    return value


def _field(text: str, low: int, high: int, what: str, names: Sequence[str] = (),
           offset: int = 0) -> FrozenSet[int] | None:
    """The values ``text`` allows, or None for every value (``*``, ``?``)."""
    if text in ("*", "?"):
        return None
    found: set = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{what}: empty item in {text!r}")
        span, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) < 1:
                raise CronError(f"{what}: step {step_text!r} must be a positive number")
            step = int(step_text)
        if span in ("*", "?"):
            first, last = low, high
        elif "-" in span:
            a, _, b = span.partition("-")
            first = _value(a, low, high, names, offset, what)
            last = _value(b, low, high, names, offset, what)
            if last < first:
                raise CronError(f"{what}: range {span!r} runs backwards")
        else:
            first = _value(span, low, high, names, offset, what)
            last = high if step_text else first
        found.update(range(first, last + 1, step))
    return frozenset(found)


def _all(low: int, high: int) -> FrozenSet[int]:
    return frozenset(range(low, high + 1))


def parse_window(expression: str) -> Window:
    """The window ``expression`` describes; raises CronError saying what is wrong."""
    fields = expression.split()
    if len(fields) == 5:
        minute, hour, day, month, weekday = fields
        year = None
        weekday_low, weekday_high, weekday_offset = 0, 7, 0  # 0 and 7 are Sunday
    elif len(fields) in (6, 7):
        second, minute, hour, day, month, weekday = fields[:6]
        year = fields[6] if len(fields) == 7 else None
        _field(second, 0, 59, "second")
        weekday_low, weekday_high, weekday_offset = 1, 7, 1  # Quartz: 1 is Sunday
    else:
        raise CronError(f"has {len(fields)} fields; give 5 (minute hour day-of-month month day-of-week) "
                        "or Quartz's 6-7 (second first, year last)")
    weekdays = _field(weekday, weekday_low, weekday_high, "day-of-week", DAYS, weekday_offset)
    if weekdays is not None:
        weekdays = frozenset((w - weekday_offset) % 7 for w in weekdays)
    days = _field(day, 1, 31, "day-of-month")
    years = _field(year, 1970, 2199, "year") if year is not None else None
    return Window(minutes=_field(minute, 0, 59, "minute") or _all(0, 59),
                  hours=_field(hour, 0, 23, "hour") or _all(0, 23),
                  days=days or _all(1, 31), months=_field(month, 1, 12, "month", MONTHS, 1) or _all(1, 12),
                  weekdays=weekdays if weekdays is not None else _all(0, 6), years=years,
                  days_restricted=days is not None, weekdays_restricted=weekdays is not None)


def in_any_window(windows: Sequence[str], when: dt.datetime) -> bool:
    """Whether ``when`` is inside one of ``windows``; True when there are none (no windows:
    a roll may start at any time).  The expressions were checked when the spec was read."""
    if not windows:
        return True
    return any(parse_window(w).contains(when) for w in windows)
