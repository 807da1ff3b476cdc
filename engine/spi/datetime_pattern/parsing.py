"""Text to epoch milliseconds: fixed-width text read straight from its bytes, anything else
with one regular expression per pattern; then integer date arithmetic."""

from __future__ import annotations

import datetime as _dt
import functools
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.spi.datetime_pattern.syntax import (
    MONTHS,
    DateTimeParseError,
    Field,
    check_pattern,
    check_timezone,
    compile_pattern,
)

_NUMERIC = set("yYxCwDMdhHkKmsSe")
_HOUR_RANGE = {"H": (0, 23), "k": (1, 24), "K": (0, 11), "h": (1, 12)}


def parse_java_datetime(values, pattern: str, timezone: str | None = None) -> pa.Array:
    """Text in ``pattern`` (Arrow or numpy strings; nulls stay null) as int64 epoch
    milliseconds. Text without an offset is read in ``timezone`` (UTC by default). A value
    that does not match, or names an impossible date, raises DateTimeParseError naming the
    value and the pattern."""
    regex, groups, plain = _parser(pattern)
    zone = check_timezone(timezone)
    strings = _string_array(values)
    text = strings.drop_null() if strings.null_count else strings
    fields = _fixed_width_fields(text, plain) if plain else None
    if fields is None:
        matched = pc.extract_regex(text, regex) if groups else None
        ok = matched.is_valid() if groups else pc.match_substring_regex(text, regex)
        _raise_first(text, pc.invert(ok), pattern)
        fields = [(f, _field_value(f, pc.struct_field(matched, [i]))) for i, f in enumerate(groups)]
    millis, invalid = _epoch_millis(fields, len(text), zone)
    _raise_first(text, pa.array(invalid), pattern, "has a field out of range for")
    if not strings.null_count:
        return pa.array(millis, pa.int64())
    present = strings.is_valid().to_numpy(zero_copy_only=False)
    return pc.take(pa.array(millis, pa.int64()), pa.array(np.cumsum(present) - 1, mask=~present))


@functools.lru_cache(maxsize=256)
def _parser(pattern: str) -> tuple[str, tuple[Field, ...], tuple[Field, ...] | None]:
    """The regular expression that matches ``pattern``, the field of each of its groups,
    and (for the fixed-width reader) all fields when they are only numbers and literals."""
    check_pattern(pattern, parsing=True)
    fields = compile_pattern(pattern)
    regex, groups = ["^"], []
    for i, f in enumerate(fields):
        if not f.letter:
            regex.append(re.escape(f.text))
            continue
        nxt = fields[i + 1] if i + 1 < len(fields) else None
        # Joda: a number followed directly by another number has the fixed width of its run.
        fixed = nxt is not None and nxt.letter in _NUMERIC and (f.letter != "M" or f.count < 3)
        regex.append(f"(?P<g{len(groups)}>{_group_regex(f, fixed)})")
        groups.append(f)
    regex.append("$")
    zones = sum(f.letter in ("Z", "X") for f in fields)
    plain = zones <= 1 and all(f.letter in _NUMERIC or f.letter in ("", "Z", "X") for f in fields)
    return "".join(regex), tuple(groups), fields if plain else None


def _group_regex(f: Field, fixed: bool) -> str:
    if (f.letter == "M" and f.count >= 3) or f.letter in "EG":
        return "[A-Za-z]+"
    if f.letter == "a":
        return "[AaPp][Mm]"
    if f.letter in "ZX":
        return r"Z|[+-]\d{2}(?::?\d{2})?"
    if f.letter in "yY" and f.count == 2:
        return r"\d{2}"
    if fixed:
        return rf"\d{{{f.count}}}"
    return r"[+-]?\d+" if f.letter in "yY" else r"\d+"


def _fixed_width_fields(text: pa.Array, fields: tuple[Field, ...]):
    """The common case read straight from the bytes: a pattern of numbers, literals and at
    most one offset, and values that all have one width (``2021-07-21 06:00:00Z``). None
    when the general reader must decide (it names the value that does not match)."""
    if len(text) == 0 or any(f.letter == "M" and f.count >= 3 for f in fields):
        return None
    offsets = np.frombuffer(text.buffers()[1], np.int32, len(text) + 1, text.offset * 4)
    lengths = np.diff(offsets)
    width = int(lengths[0])
    sizes = [0 if f.letter in ("Z", "X") else f.count or len(f.text.encode()) for f in fields]
    zone_width = width - sum(sizes)
    if not np.all(lengths == width) or zone_width not in ((1, 3, 5, 6) if 0 in sizes else (0,)):
        return None
    raw = np.frombuffer(text.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    # one row per character position, so that every step below reads contiguous memory;
    # '0'..'9' become 0..9 and every other character a code above 9
    columns = np.ascontiguousarray((raw.reshape(len(text), width) - np.uint8(48)).T)
    out, at = [], 0
    for f, size in zip(fields, sizes, strict=True):
        size = size or zone_width
        rows = columns[at : at + size]
        at += size
        if not f.letter:
            expected = np.frombuffer(f.text.encode(), np.uint8) - np.uint8(48)
            if not (rows == expected[:, None]).all():
                return None
            continue
        value = _fixed_offset(rows) if f.letter in ("Z", "X") else _number(rows)
        if value is None:
            return None
        if f.letter == "S":  # a fraction: its first three digits are milliseconds
            value = value * 10 ** max(0, 3 - size) // 10 ** max(0, size - 3)
        out.append((f, value))
    return out


def _number(rows: np.ndarray) -> np.ndarray | None:
    """The number written by digit rows (most significant first), or None if any is not
    a digit."""
    if rows.max() > 9:
        return None
    value = rows[0].astype(np.int64)
    for row in rows[1:]:
        value = value * 10 + row
    return value


def _fixed_offset(rows: np.ndarray) -> np.ndarray | None:
    """Offset minutes from ``Z``, ``+HH``, ``+HHMM`` or ``+HH:MM`` (as digit-code rows)."""
    plus, minus, colon, zulu = (np.uint8((ord(c) - 48) % 256) for c in "+-:Z")
    if len(rows) == 1:
        return np.zeros(rows.shape[1], np.int64) if np.all(rows[0] == zulu) else None
    sign = rows[0]
    if not np.all((sign == plus) | (sign == minus)):
        return None
    if len(rows) == 6 and not np.all(rows[3] == colon):
        return None
    hours = _number(rows[1:3])
    minutes = _number(rows[-2:]) if len(rows) > 3 else 0
    if hours is None or minutes is None:
        return None
    total = hours * 60 + minutes
    return np.where(sign == minus, -total, total)


def _field_value(f: Field, text: pa.Array) -> np.ndarray:
    """A captured field as a number: month names as 1-12, AM/PM as 0/1, offsets in minutes,
    fractions of a second in milliseconds."""
    if f.letter == "M" and f.count >= 3:
        names = [m.upper() for m in MONTHS] + [m[:3].upper() for m in MONTHS]
        index = _numbers(pc.fill_null(pc.index_in(pc.utf8_upper(text), pa.array(names)), -1))
        return np.where(index < 0, 0, index % 12 + 1)  # 0 marks an unknown name as invalid
    if f.letter == "a":
        return _numbers(pc.equal(pc.utf8_upper(text), "PM"))
    if f.letter in "ZX":
        digits = pc.replace_substring(pc.replace_substring(text, ":", ""), "Z", "+0000")
        hours = _numbers(pc.utf8_slice_codeunits(digits, 1, 3))
        minutes = _numbers(
            pc.if_else(
                pc.equal(pc.utf8_length(digits), 3), "0", pc.utf8_slice_codeunits(digits, 3, 5)
            )
        )
        return (1 - 2 * _numbers(pc.starts_with(digits, "-"))) * (hours * 60 + minutes)
    if f.letter == "S":
        return _numbers(pc.utf8_slice_codeunits(pc.utf8_rpad(text, 3, "0"), 0, 3))
    if f.letter in "EG":
        return np.zeros(len(text), np.int64)
    return _numbers(text)


def _numbers(values: pa.Array) -> np.ndarray:
    return pc.cast(values, pa.int64()).to_numpy(zero_copy_only=False)


def _epoch_millis(fields: list, n: int, zone: str) -> tuple[np.ndarray, np.ndarray]:
    """Epoch ms from numeric field values, and a mask of impossible dates and times."""
    got = {f.letter if f.letter != "Y" else "y": (f, v) for f, v in fields}
    zeros = np.zeros(n, np.int64)
    year = got["y"][1] if "y" in got else np.full(n, 1970)
    if "y" in got and got["y"][0].count == 2:
        year = _pivot(year)
    month = got["M"][1] if "M" in got else np.ones(n, np.int64)
    invalid = (month < 1) | (month > 12)
    hour = zeros
    for letter, (low, high) in _HOUR_RANGE.items():
        if letter in got:
            hour = got[letter][1]
            invalid |= (hour < low) | (hour > high)
            hour = hour % 24 if letter == "k" else hour
            if letter in "hK" and "a" in got:
                hour = hour % 12 + 12 * got["a"][1]
    minute, second = (got[k][1] if k in got else zeros for k in "ms")
    invalid |= (minute > 59) | (second > 59)
    if "D" in got:
        day_of_year = got["D"][1]
        days = _days_from_civil(year, 1, 1) + day_of_year - 1
        invalid |= (day_of_year < 1) | (day_of_year > 365 + _is_leap(year))
    else:
        day = got["d"][1] if "d" in got else np.ones(n, np.int64)
        month = np.clip(month, 1, 12)
        month_days = _MONTH_DAYS[month - 1] + ((month == 2) & _is_leap(year))
        invalid |= (day < 1) | (day > month_days)
        days = _days_from_civil(year, month, day)
    fraction = got["S"][1] if "S" in got else zeros
    millis = days * 86_400_000 + hour * 3_600_000 + minute * 60_000 + second * 1000 + fraction
    offset = got.get("Z", got.get("X"))
    if offset is not None:
        millis = millis - offset[1] * 60_000
    elif zone != "UTC":
        local = pa.array(millis, pa.timestamp("ms"))
        utc = pc.assume_timezone(local, zone, ambiguous="earliest", nonexistent="earliest")
        millis = utc.view(pa.int64()).to_numpy()
    return millis, invalid


_MONTH_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def _is_leap(year):
    return (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))


def _days_from_civil(year, month, day):
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm), in
    integer numpy arithmetic: faster than going through datetime64 months."""
    y = year - (month <= 2)
    era = y // 400
    year_of_era = y - era * 400
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _raise_first(strings, bad, pattern: str, what: str = "does not match") -> None:
    if pc.any(bad).as_py():
        first = pc.index(bad, True).as_py()
        raise DateTimeParseError(f"{strings[first].as_py()!r} {what} date-time pattern {pattern!r}")


def _string_array(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array(np.asarray(values, dtype=object), pa.string())
    return values if pa.types.is_string(values.type) else pc.cast(values, pa.string())


def _pivot(two_digits: np.ndarray) -> np.ndarray:
    """Joda's two-digit year: the year within 50 years either side of this year."""
    base = _dt.datetime.now(_dt.UTC).year - 50
    year = (base // 100) * 100 + two_digits
    return np.where(year < base, year + 100, year)
