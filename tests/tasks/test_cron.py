"""Quartz cron expressions, as Pinot's task `schedule` holds them, fire at the times Quartz
would: checked against next-fire times worked out by hand from Quartz's rules."""

from __future__ import annotations

import datetime as dt

import pytest

from tasks.cron import CronError, quartz_trigger

# Thursday 2026-01-01 00:03:07 UTC
START = dt.datetime(2026, 1, 1, 0, 3, 7, tzinfo=dt.UTC)


def fires(expression: str, count: int = 2) -> list[str]:
    trigger = quartz_trigger(expression)
    out, previous, now = [], None, START
    for _ in range(count):
        previous = trigger.get_next_fire_time(previous, now)
        out.append(previous.strftime("%Y-%m-%d %H:%M:%S %a"))
        now = previous + dt.timedelta(seconds=1)
    return out


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("0 */10 * * * ?", ["2026-01-01 00:10:00 Thu", "2026-01-01 00:20:00 Thu"]),
        ("30 * * * * ?", ["2026-01-01 00:03:30 Thu", "2026-01-01 00:04:30 Thu"]),
        ("0 0/5 14 * * ?", ["2026-01-01 14:00:00 Thu", "2026-01-01 14:05:00 Thu"]),
        # day-of-week counts from SUN = 1
        ("0 0 12 ? * 1", ["2026-01-04 12:00:00 Sun", "2026-01-11 12:00:00 Sun"]),
        ("0 0 12 ? * WED", ["2026-01-07 12:00:00 Wed", "2026-01-14 12:00:00 Wed"]),
        (
            "0 0 8 ? * 2-6",
            ["2026-01-01 08:00:00 Thu", "2026-01-02 08:00:00 Fri", "2026-01-05 08:00:00 Mon"],
        ),
        ("0 0 8 ? * MON,FRI", ["2026-01-02 08:00:00 Fri", "2026-01-05 08:00:00 Mon"]),
        # last day of the month, last Friday, first Monday
        ("0 0 0 L * ?", ["2026-01-31 00:00:00 Sat", "2026-02-28 00:00:00 Sat"]),
        ("0 15 10 ? * 6L", ["2026-01-30 10:15:00 Fri", "2026-02-27 10:15:00 Fri"]),
        ("0 0 10 ? * 2#1", ["2026-01-05 10:00:00 Mon", "2026-02-02 10:00:00 Mon"]),
        ("0 0 12 1/5 * ?", ["2026-01-01 12:00:00 Thu", "2026-01-06 12:00:00 Tue"]),
        ("0 11 11 11 11 ?", ["2026-11-11 11:11:00 Wed", "2027-11-11 11:11:00 Thu"]),
        ("0 0 6 ? JAN,FEB MON", ["2026-01-05 06:00:00 Mon", "2026-01-12 06:00:00 Mon"]),
        # the optional seventh field is the year
        ("0 0 12 * * ? 2027", ["2027-01-01 12:00:00 Fri", "2027-01-02 12:00:00 Sat"]),
    ],
)
def test_quartz_expressions_fire_when_quartz_would(expression, expected):
    assert fires(expression, len(expected)) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("*/5 * * * *", "must have 6 or 7 fields"),
        ("0 0 12 1 * MON", "one of day-of-month and day-of-week must be '?'"),
        ("0 0 12 15W * ?", "'W' and 'L-n' are not supported"),
        ("0 0 12 ? * 8", "must be 1-7 (1 = SUN)"),
        ("0 0 12 ? * 2#9", "the n of '#n' must be 1-5"),
        ("0 61 * * * ?", "0 61 * * * ?"),
    ],
)
def test_bad_expressions_are_refused_naming_the_fault(expression, message):
    with pytest.raises(CronError, match=message.replace("(", r"\(").replace(")", r"\)")):
        quartz_trigger(expression)
