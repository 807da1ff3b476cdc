"""Pinot's ``DateTimeFunctions`` and the time transforms (DATETRUNC, DATETIMECONVERT,
TIMECONVERT). Every epoch value is in milliseconds since 1970-01-01T00:00:00Z unless the
function's name says otherwise (``toEpochDays`` returns days). As in Pinot, epoch
conversions are Java long divisions, which truncate toward zero; DATETRUNC and
DATETIMECONVERT floor. Java date-time patterns are read by ``engine.spi.datetime_pattern``.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.common.clock import now_ms
from engine.common.errors import ConfigError
from engine.functions.registry import FunctionArgumentError, FunctionValueError, register
from engine.functions.values import as_long, java_div
from engine.spi.datetime_format import UNIT_MILLIS, DateTimeFormat
from engine.spi.datetime_pattern import (
    DateTimeParseError,
    InvalidPatternError,
    check_pattern,
    format_java_datetime,
    is_utc,
    parse_java_datetime,
)

# Pinot's TimeUnit names (sub-millisecond units cannot count epoch ms), plus WEEKS
UNIT_MS = {k: int(v) for k, v in UNIT_MILLIS.items() if v >= 1} | {"WEEKS": 7 * 86_400_000}
_UNIT_ALIASES = {"MILLISECOND": "MILLISECONDS", "SECOND": "SECONDS", "MINUTE": "MINUTES",
                 "HOUR": "HOURS", "DAY": "DAYS", "WEEK": "WEEKS", "MS": "MILLISECONDS"}  # fmt: skip
_LONG, _INT = "LONG", "INT"


def unit_ms(name: str) -> int:
    key = str(name).upper()
    key = _UNIT_ALIASES.get(key, key)
    if key not in UNIT_MS:
        raise FunctionArgumentError(f"Unknown time unit '{name}'")
    return UNIT_MS[key]


def _register_epoch_functions() -> None:
    """toEpoch<Unit>[Rounded|Bucket] and fromEpoch<Unit>[Bucket] for seconds ... days."""
    for unit in ("Seconds", "Minutes", "Hours", "Days"):
        ms = UNIT_MS[unit.upper()]

        def to_epoch(millis, _ms=ms):
            return java_div(as_long(millis), _ms)

        def to_epoch_rounded(millis, nearest, _ms=ms):
            n = int(nearest)
            return java_div(java_div(as_long(millis), _ms), n) * n

        def to_epoch_bucket(millis, bucket, _ms=ms):
            return java_div(java_div(as_long(millis), _ms), int(bucket))

        def from_epoch(value, _ms=ms):
            return as_long(value) * _ms

        def from_epoch_bucket(value, bucket, _ms=ms):
            return as_long(value) * (int(bucket) * _ms)

        register(f"toEpoch{unit}", 1, 1, _LONG)(to_epoch)
        register(f"toEpoch{unit}Rounded", 2, 2, _LONG)(to_epoch_rounded)
        register(f"toEpoch{unit}Bucket", 2, 2, _LONG)(to_epoch_bucket)
        register(f"fromEpoch{unit}", 1, 1, _LONG)(from_epoch)
        register(f"fromEpoch{unit}Bucket", 2, 2, _LONG)(from_epoch_bucket)


_register_epoch_functions()


def _pattern(pattern, parsing: bool = False) -> str:
    try:
        check_pattern(str(pattern), parsing=parsing)
    except InvalidPatternError as err:
        raise FunctionArgumentError(str(err)) from err
    return str(pattern)


def _column(values, convert):
    """(a one-or-more row column, whether ``values`` was one scalar): Arrow columns are
    kept, numpy columns and scalars go through ``convert``."""
    if isinstance(values, pa.Array):
        return values, False
    return np.atleast_1d(convert(values)), np.ndim(values) == 0


def _answer(result: pa.Array, values, scalar: bool):
    """Arrow for an Arrow input, else numpy (or the one value of a scalar input)."""
    if isinstance(values, pa.Array):
        return result
    out = result.to_numpy(zero_copy_only=False)
    if not scalar:
        return out
    return out[0].item() if isinstance(out[0], np.generic) else out[0]


def _long_arrow(values: pa.Array) -> pa.Array:
    if pa.types.is_floating(values.type):  # Java's (long) cast truncates
        return pc.cast(pc.trunc(values), pa.int64())
    return values


@register("toDateTime", 2, 3, "STRING", arrow=True)
def to_date_time(millis, pattern, timezone=None):
    """Epoch ms as text in a Java pattern, in ``timezone`` (UTC by default)."""
    pattern = _pattern(pattern)
    column, scalar = _column(millis, as_long)
    if isinstance(column, pa.Array):
        column = _long_arrow(column)
    try:
        text = format_java_datetime(column, pattern, timezone)
    except InvalidPatternError as err:  # an unknown time zone
        raise FunctionArgumentError(f"ToDateTime: {err}") from err
    return _answer(text, millis, scalar)


@register("fromDateTime", 2, 3, _LONG, arrow=True)
def from_date_time(strings, pattern, timezone=None):
    """Text in a Java pattern as epoch ms (read in ``timezone`` unless it has an offset)."""
    pattern = _pattern(pattern, parsing=True)
    column, scalar = _column(strings, lambda v: np.asarray(v, dtype=object))
    try:
        millis = parse_java_datetime(column, pattern, timezone)
    except InvalidPatternError as err:
        raise FunctionArgumentError(f"FromDateTime: {err}") from err
    except DateTimeParseError as err:
        raise FunctionValueError(str(err)) from err
    return _answer(millis, strings, scalar)


@register("now", 0, 0, _LONG)
def now():
    return now_ms()


_ISO = re.compile(
    r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


@register("ago", 1, 1, _LONG)
def ago(duration):
    """Now minus an ISO-8601 duration (``PT1H``, ``P1D``, ``P2DT3H``), in epoch millis."""
    match = _ISO.match(str(duration))
    if not match or not any(match.groupdict().values()):
        raise FunctionArgumentError(f"AGO: invalid ISO-8601 duration '{duration}'")
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    ms = ((parts["d"] * 24 + parts["h"]) * 60 + parts["m"]) * 60_000 + parts["s"] * 1000
    return int(now_ms() - ms)


# ---- calendar fields ----------------------------------------------------------------------


def _calendar(field: str, **options):
    def impl(millis, timezone=None):
        zone = "UTC" if is_utc(timezone) else str(timezone)
        scalar = np.ndim(millis) == 0
        stamps = pa.array(np.atleast_1d(as_long(millis))).view(pa.timestamp("ms", tz=zone))
        try:
            values = getattr(pc, field)(stamps, **options)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise FunctionArgumentError(f"unknown time zone '{timezone}'") from err
        out = values.to_numpy(zero_copy_only=False).astype(np.int32)
        return int(out[0]) if scalar else out

    return impl


for _names, _field, _options in [
    ("year", "year", {}),
    (("yearOfWeek", "yow"), "iso_year", {}),
    ("quarter", "quarter", {}),
    ("month", "month", {}),
    (("week", "weekOfYear"), "iso_week", {}),
    (("dayOfYear", "doy"), "day_of_year", {}),
    (("day", "dayOfMonth"), "day", {}),
    (("dayOfWeek", "dow"), "day_of_week", {"count_from_zero": False, "week_start": 1}),
    ("hour", "hour", {}),
    ("minute", "minute", {}),
    ("second", "second", {}),
    ("millisecond", "millisecond", {}),
]:
    register(_names, 1, 2, _INT)(_calendar(_field, **_options))


# ---- DATETRUNC, DATETIMECONVERT, TIMECONVERT ----------------------------------------------

_TRUNC_UNITS = {"MILLISECOND": "ms", "SECOND": "s", "MINUTE": "m", "HOUR": "h", "DAY": "D",
                "MONTH": "M", "YEAR": "Y"}  # fmt: skip
_FIXED = {"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}


@register("datetrunc", 2, 5, _LONG)
def date_trunc(unit, value, input_unit="MILLISECONDS", timezone="UTC", output_unit=None):
    """Truncate ``value`` (in ``input_unit`` since epoch) down to the start of its ``unit``
    (second ... year; weeks start on Monday) on the clock of ``timezone``, returned in
    ``output_unit`` (default: ``input_unit``)."""
    in_ms = unit_ms(input_unit)
    out_ms = unit_ms(output_unit or input_unit)
    millis = np.asarray(value, dtype=np.int64)
    if in_ms != 1:
        millis = millis * in_ms
    key = str(unit).upper()
    linear = trunc_buckets(key, timezone)
    if not is_utc(timezone):
        truncated = _trunc_in_zone(millis, key, str(timezone))
    elif linear is not None:  # fixed-length units: integer arithmetic, no calendar
        step, phase = linear
        # floor division: right for negatives too
        truncated = ((millis - phase) // step) * step + phase
    elif key == "QUARTER":
        months = millis.astype("datetime64[ms]").astype("datetime64[M]").astype(np.int64)
        truncated = (
            ((months // 3) * 3).astype("datetime64[M]").astype("datetime64[ms]").astype(np.int64)
        )
    elif key in _TRUNC_UNITS:
        code = _TRUNC_UNITS[key]
        truncated = (
            millis.astype("datetime64[ms]")
            .astype(f"datetime64[{code}]")
            .astype("datetime64[ms]")
            .astype(np.int64)
        )
    else:
        raise FunctionArgumentError(f"DATETRUNC: unknown unit '{unit}'")
    return truncated if out_ms == 1 else np.floor_divide(truncated, out_ms)


def trunc_buckets(unit: str, timezone: str = "UTC") -> tuple[int, int] | None:
    """(step, phase) in ms when DATETRUNC to ``unit`` is the bucket start
    ``floor((ms - phase) / step) * step + phase`` (seconds ... weeks in UTC); None for units
    that follow the calendar (month, quarter, year) or a time zone's wall clock."""
    key = str(unit).upper()
    if not is_utc(timezone):
        return None
    if key in _FIXED:
        return _FIXED[key], 0
    if key == "WEEK":  # weeks start on Monday; 1970-01-01 is a Thursday, so 1969-12-29
        return 7 * 86_400_000, -3 * 86_400_000
    return None


def _trunc_in_zone(millis: np.ndarray, unit: str, timezone: str) -> np.ndarray:
    """DATETRUNC on the wall clock of ``timezone`` (a day starts at local midnight)."""
    if unit not in (*_TRUNC_UNITS, "WEEK", "QUARTER"):
        raise FunctionArgumentError(f"DATETRUNC: unknown unit '{unit}'")
    try:
        stamps = pa.array(np.atleast_1d(millis)).view(pa.timestamp("ms", tz=timezone))
        floored = pc.floor_temporal(stamps, unit=unit.lower(), week_starts_monday=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise FunctionArgumentError(f"DATETRUNC: unknown time zone '{timezone}'") from err
    out = floored.view(pa.int64()).to_numpy(zero_copy_only=False)
    return out if np.ndim(millis) else out[0]


def granularity_ms(spec: str) -> int:
    """``15:MINUTES`` -> 900000."""
    parts = str(spec).split(":")
    if len(parts) != 2:
        raise FunctionArgumentError(f"Invalid granularity '{spec}', expected e.g. '1:HOURS'")
    try:
        return int(parts[0]) * unit_ms(parts[1])
    except ValueError as err:
        raise FunctionArgumentError(f"Invalid granularity '{spec}'") from err


def date_time_format(spec) -> DateTimeFormat:
    """A Pinot date-time format string, or FunctionArgumentError naming it."""
    try:
        return DateTimeFormat.parse(str(spec), "format")
    except ConfigError as err:
        raise FunctionArgumentError(f"Invalid datetime format '{spec}': {err.message}") from err


def _dtc_type(arg_types: list[str]) -> str:
    return "UNKNOWN"  # resolved by the planner from the output format literal


@register("datetimeconvert", 4, 5, _dtc_type)
def date_time_convert(values, input_format, output_format, granularity, timezone="UTC"):
    """Convert ``values`` from ``input_format`` to ``output_format``, bucketed down to
    ``granularity`` (bucket start inclusive) on the wall clock of ``timezone`` (Pinot's
    optional bucketing time zone: a 1:DAYS bucket starts at that zone's midnight)."""
    source, target = date_time_format(input_format), date_time_format(output_format)
    bucket = granularity_ms(str(granularity))
    scalar = np.ndim(values) == 0
    try:
        millis = np.asarray(source.to_millis(np.atleast_1d(values)), dtype=np.int64)
    except DateTimeParseError as err:
        raise FunctionValueError(str(err)) from err
    if bucket != 1:
        offset = _zone_offset_ms(millis, str(timezone))
        millis = np.floor_divide(millis + offset, bucket) * bucket - offset
    out = target.from_millis(millis)
    return out[0] if scalar else out


def _zone_offset_ms(millis: np.ndarray, timezone: str) -> np.ndarray | int:
    """Each instant's UTC offset in ``timezone``, in ms (0 for UTC)."""
    if is_utc(timezone):
        return 0
    try:
        stamps = pa.array(millis).view(pa.timestamp("ms", tz=timezone))
        local = pc.local_timestamp(stamps).view(pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise FunctionArgumentError(f"DATETIMECONVERT: unknown time zone '{timezone}'") from err
    return local - millis


@register("timeconvert", 3, 3, _LONG)
def time_convert(value, from_unit, to_unit):
    """``value`` counted in ``from_unit`` since epoch, re-counted in ``to_unit`` (floored)."""
    return np.floor_divide(np.asarray(value, dtype=np.int64) * unit_ms(from_unit), unit_ms(to_unit))
