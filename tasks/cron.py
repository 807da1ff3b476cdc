"""Quartz cron expressions (what Pinot's ``schedule`` task config holds) as APScheduler
CronTriggers.

Quartz: ``sec min hour day-of-month month day-of-week [year]``; ``?`` means "no specific
value" in one of the two day fields; day-of-week counts 1-7 from SUN (or SUN-SAT);
``L`` (last), ``nL`` (last weekday n of the month) and ``n#k`` (k-th weekday n) exist.
APScheduler counts weekdays from MON and writes "last" and "2nd fri" in its ``day`` field,
so those are translated; ``W`` (nearest weekday) and ``L-n`` have no equivalent and are
refused with an error naming the field.
"""

from __future__ import annotations

import re

from apscheduler.triggers.cron import CronTrigger

_DOW_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_ORDINALS = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 5: "5th"}
_FIELDS = ("second", "minute", "hour", "day", "month", "day_of_week", "year")


class CronError(ValueError):
    """An expression that is not valid Quartz, or uses a part APScheduler cannot express."""


def _weekday(token: str, expression: str) -> str:
    token = token.strip().lower()
    if token.isdigit():
        number = int(token)
        if not 1 <= number <= 7:
            raise CronError(f"day-of-week {token} in {expression!r} must be 1-7 (1 = SUN)")
        return _DOW_NAMES[number - 1]
    if token[:3] in _DOW_NAMES and len(token) == 3:
        return token
    raise CronError(f"day-of-week {token!r} in {expression!r} is not 1-7 or SUN-SAT")


def _day_of_week(field: str, expression: str) -> tuple[str | None, str | None]:
    """(day_of_week, day) for APScheduler from Quartz's day-of-week field."""
    if field in ("?", "*"):
        return None, None
    if "#" in field:
        weekday, _, nth = field.partition("#")
        if not nth.isdigit() or int(nth) not in _ORDINALS:
            raise CronError(f"'{field}' in {expression!r}: the n of '#n' must be 1-5")
        return None, f"{_ORDINALS[int(nth)]} {_weekday(weekday, expression)}"
    if field.upper().endswith("L") and len(field) > 1:
        return None, f"last {_weekday(field[:-1], expression)}"
    parts = []
    for part in field.split(","):
        step = ""
        if "/" in part:
            part, step = part.split("/", 1)
            step = f"/{step}"
        if "-" in part:
            first, last = part.split("-", 1)
            parts.append(f"{_weekday(first, expression)}-{_weekday(last, expression)}{step}")
        elif part == "*":
            parts.append(f"*{step}")
        else:
            parts.append(f"{_weekday(part, expression)}{step}")
    return ",".join(parts), None


def _day_of_month(field: str, expression: str) -> str | None:
    if field in ("?", "*"):
        return None
    upper = field.upper()
    if upper == "L":
        return "last"
    if "W" in upper or upper.startswith("L-"):
        raise CronError(
            f"day-of-month '{field}' in {expression!r}: 'W' and 'L-n' are not supported"
        )
    return field


def quartz_fields(expression: str) -> dict[str, str]:
    """The APScheduler CronTrigger keyword fields of a Quartz expression."""
    tokens = (expression or "").split()
    if len(tokens) not in (6, 7):
        raise CronError(
            f"cron expression {expression!r} must have 6 or 7 fields (Quartz: second minute "
            "hour day-of-month month day-of-week [year]), e.g. '0 */10 * * * ?'"
        )
    second, minute, hour, dom, month, dow = tokens[:6]
    if dom != "?" and dow != "?":
        raise CronError(
            f"cron expression {expression!r}: one of day-of-month and day-of-week must be '?'"
        )
    fields = {"second": second, "minute": minute, "hour": hour, "month": month.lower()}
    day = _day_of_month(dom, expression)
    day_of_week, dow_day = _day_of_week(dow, expression)
    if day is not None:
        fields["day"] = day
    if dow_day is not None:
        fields["day"] = dow_day
    if day_of_week is not None:
        fields["day_of_week"] = day_of_week
    if len(tokens) == 7 and tokens[6] not in ("*", "?"):
        fields["year"] = tokens[6]
    # Quartz's "a/n" starts at a and steps by n; APScheduler reads "a/n" the same way
    return fields


def quartz_trigger(expression: str, timezone: str = "UTC") -> CronTrigger:
    """A CronTrigger firing when the Quartz expression does; CronError naming the fault."""
    fields = quartz_fields(expression)
    try:
        return CronTrigger(timezone=timezone, **fields)
    except ValueError as exc:
        raise CronError(f"cron expression {expression!r}: {exc}") from None


def describe(expression: str) -> str:
    """A one-line summary of the translated fields (Quartz's ExpressionSummary)."""
    fields = quartz_fields(expression)
    return "; ".join(f"{name}: {fields.get(name, '*')}" for name in _FIELDS)


def is_quartz(expression: str) -> bool:
    return bool(re.match(r"^\S+(\s+\S+){5,6}$", (expression or "").strip()))
