"""Maintenance time windows: the cron expressions spec.maintenanceTimeWindows takes (five
fields, or Strimzi's Quartz form), what they let in, what they refuse and how."""

from __future__ import annotations

import datetime as dt

import pytest

from qdmesh_operator.model.errors import SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.operations.windows import CronError, in_any_window, parse_window

UTC = dt.timezone.utc
SAT_0030 = dt.datetime(2026, 11, 28, 0, 30, tzinfo=UTC)  # a Saturday
FRI_0030 = dt.datetime(2026, 11, 27, 0, 30, tzinfo=UTC)
SUN_0159 = dt.datetime(2026, 11, 29, 1, 59, tzinfo=UTC)
SUN_0200 = dt.datetime(2026, 11, 29, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize("expression", ["* * 0-1 ? * SUN,SAT", "* 0-1 * * SAT,SUN", "* 0-1 * * 6,0",
                                        "* 0-1 * * 6,7", "0 * 0-1 ? * 7,1", "* * 0-1 ? * 1,7 2026"])
def test_weekend_nights_in_both_forms(expression: str) -> None:
    window = parse_window(expression)
    assert window.contains(SAT_0030) and window.contains(SUN_0159)
    assert not window.contains(FRI_0030) and not window.contains(SUN_0200)


def test_steps_ranges_lists_and_months() -> None:
    window = parse_window("*/15 22-23 * NOV,DEC *")
    assert window.contains(dt.datetime(2026, 12, 1, 22, 45, tzinfo=UTC))
    assert not window.contains(dt.datetime(2026, 12, 1, 22, 46, tzinfo=UTC))
    assert not window.contains(dt.datetime(2026, 10, 1, 22, 45, tzinfo=UTC))
    assert parse_window("0-30/10 3 1 * *").minutes == frozenset({0, 10, 20, 30})


def test_day_of_month_or_day_of_week_when_both_are_restricted() -> None:
    window = parse_window("* * 1 * MON")  # cron: the 1st, or any Monday
    assert window.contains(dt.datetime(2026, 11, 1, 5, 0, tzinfo=UTC))  # a Sunday, the 1st
    assert window.contains(dt.datetime(2026, 11, 30, 5, 0, tzinfo=UTC))  # a Monday
    assert not window.contains(dt.datetime(2026, 11, 3, 5, 0, tzinfo=UTC))


def test_a_time_in_another_zone_is_read_in_utc() -> None:
    paris = dt.timezone(dt.timedelta(hours=1))
    assert parse_window("* 0 * * *").contains(dt.datetime(2026, 11, 28, 1, 30, tzinfo=paris))


def test_no_windows_lets_every_time_in() -> None:
    assert in_any_window([], FRI_0030)
    assert in_any_window(["* 3 * * *", "* 0 * * SAT"], SAT_0030)
    assert not in_any_window(["* 3 * * *"], SAT_0030)


@pytest.mark.parametrize("expression, problem", [
    ("* * *", "has 3 fields"), ("61 * * * *", "minute: 61 is outside 0-59"),
    ("* 24 * * *", "hour: 24"), ("* * L * *", "day-of-month: 'L'"), ("* * * * 1#2", "day-of-week"),
    ("5-1 * * * *", "runs backwards"), ("*/0 * * * *", "step '0'"), ("* * * FOO *", "month: 'FOO'"),
    ("1,,2 * * * *", "empty item"), ("* * 0-1 ? * 0", "day-of-week: 0 is outside 1-7"),
])
def test_bad_expressions_are_refused_saying_why(expression: str, problem: str) -> None:
    with pytest.raises(CronError) as caught:
        parse_window(expression)
    assert problem in str(caught.value)


def test_the_model_names_the_window_that_is_wrong() -> None:
    spec = {"image": "qdmesh/router:1", "maintenanceTimeWindows": ["* 0 * * SUN", "* 25 * * *"]}
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", spec)
    assert caught.value.field == "spec.maintenanceTimeWindows[1]"
    assert "hour: 25 is outside 0-23" in str(caught.value)
    assert parse_mesh("m", "ns", {**spec, "maintenanceTimeWindows": ["* 0 * * SUN"]}).maintenance_windows == [
        "* 0 * * SUN"]
