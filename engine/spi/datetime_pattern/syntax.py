"""A Java date-time pattern split into fields, the letters Joda knows, and the errors."""

from __future__ import annotations

import dataclasses
import functools
import re

import pyarrow as pa

from engine.common.errors import EngineError


class InvalidPatternError(EngineError, ValueError):
    """A date-time pattern that Joda would reject (unknown letter, unterminated quote)."""


class DateTimeParseError(EngineError, pa.ArrowInvalid):
    """A value that does not match its date-time pattern. It is an ``ArrowInvalid`` so that
    callers that convert columns with Arrow handle both failures alike."""


# Joda's pattern letters, plus Java's ISO offset letter X (accepted by Pinot users' configs).
_LETTERS = set("GCYxwhHkKmsSyDMdaEezZX")
_UNPARSEABLE = set("Cxwz")  # printable, but reading them back is not supported here
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_UTC_NAMES = {"UTC", "GMT", "Z", "ETC/UTC", "ETC/GMT", "+00:00", "UCT"}


@dataclasses.dataclass(frozen=True)
class Field:
    """One piece of a pattern: a letter repeated ``count`` times, or literal ``text``."""

    letter: str
    count: int = 0
    text: str = ""


# '' (a quote) | 'quoted text' | a run of one letter | any other character
_TOKEN = re.compile(r"''|'((?:[^']|'')*)'|([A-Za-z])\2*|(.)", re.DOTALL)


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> tuple[Field, ...]:
    """Split a pattern into fields; raises InvalidPatternError naming a bad letter."""
    if not isinstance(pattern, str) or not pattern:
        raise InvalidPatternError(f"date-time pattern must be a non-empty string, got {pattern!r}")
    fields = []
    for match in _TOKEN.finditer(pattern):
        quoted, letter, other = match.groups()
        if letter:
            if letter not in _LETTERS:
                raise InvalidPatternError(
                    f"unknown pattern letter {letter!r} in date-time pattern {pattern!r}"
                )
            fields.append(Field(letter, len(match[0])))
        elif other == "'":
            raise InvalidPatternError(f"unterminated quote in date-time pattern {pattern!r}")
        else:
            text = other if other is not None else "'" if quoted is None else quoted
            fields.append(Field("", text=text.replace("''", "'")))
    return tuple(fields)


def check_pattern(pattern: str, *, parsing: bool = False) -> None:
    """Raise InvalidPatternError if ``pattern`` cannot be used (to parse, if ``parsing``)."""
    for f in compile_pattern(pattern):
        if parsing and f.letter in _UNPARSEABLE:
            raise InvalidPatternError(
                f"pattern letter {f.letter!r} in {pattern!r} can be printed but not parsed"
            )


def is_utc(timezone: str | None) -> bool:
    return timezone is None or str(timezone).upper() in _UTC_NAMES


def check_timezone(timezone: str | None) -> str:
    """The time zone id to use ("UTC" for any spelling of UTC); InvalidPatternError names
    an unknown one."""
    if is_utc(timezone):
        return "UTC"
    try:
        pa.array([0], pa.timestamp("ms", tz=str(timezone))).cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidPatternError(f"unknown time zone {timezone!r}") from exc
    return str(timezone)
