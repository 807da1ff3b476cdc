"""Time transforms. Every epoch value is in milliseconds since 1970-01-01T00:00:00Z (UTC)
unless a function's name says otherwise (``toEpochDays`` returns days).

Java ``SimpleDateFormat`` patterns (``yyyy-MM-dd HH:mm:ss``) are translated to strftime for
pyarrow, so Pinot's DATETIMECONVERT / ToDateTime format strings work unchanged.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.query.errors import QueryExecutionError, QueryValidationError
from engine.query.functions.registry import register
from engine.query.functions.scalar import as_float

UNIT_MS = {
    "MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000,
    "DAYS": 86_400_000, "WEEKS": 7 * 86_400_000,
}  # fmt: skip
_UNIT_ALIASES = {"MILLISECOND": "MILLISECONDS", "SECOND": "SECONDS", "MINUTE": "MINUTES",
                 "HOUR": "HOURS", "DAY": "DAYS", "WEEK": "WEEKS", "MS": "MILLISECONDS"}  # fmt: skip

_JAVA_TOKENS = [("yyyy", "%Y"), ("yy", "%y"), ("MMMM", "%B"), ("MMM", "%b"), ("MM", "%m"),
                ("dd", "%d"), ("HH", "%H"), ("hh", "%I"), ("mm", "%M"), ("ss", "%S"),
                ("a", "%p"), ("EEE", "%a"), ("Z", "%z")]  # fmt: skip


def unit_ms(name: str) -> int:
    key = str(name).upper()
    key = _UNIT_ALIASES.get(key, key)
    if key not in UNIT_MS:
        raise QueryValidationError(f"Unknown time unit '{name}'")
    return UNIT_MS[key]


def java_to_strftime(pattern: str) -> str:
    """Translate a Java SimpleDateFormat pattern; quoted text ('T') is kept literally."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "'":
            end = pattern.find("'", i + 1)
            end = len(pattern) if end < 0 else end
            out.append(pattern[i + 1 : end].replace("%", "%%"))
            i = end + 1
            continue
        if pattern.startswith("SSS", i):
            out.append("\x00MS\x00")
            i += 3
            continue
        for token, repl in _JAVA_TOKENS:
            if pattern.startswith(token, i):
                out.append(repl)
                i += len(token)
                break
        else:
            out.append(pattern[i].replace("%", "%%"))
            i += 1
    return "".join(out)


def format_millis(millis, pattern: str):
    """Format epoch millis (UTC) with a Java pattern -> numpy object array of strings."""
    if np.ndim(millis) == 0:
        return format_millis(np.atleast_1d(millis), pattern)[0]
    fmt = java_to_strftime(pattern)
    values = np.asarray(millis, dtype=np.int64)
    # whole seconds: strftime's %S would otherwise print the milliseconds too
    stamps = pa.array(np.floor_divide(values, 1000), type=pa.int64()).cast(pa.timestamp("s"))
    if "\x00MS\x00" in fmt:
        head, tail = fmt.split("\x00MS\x00", 1)
        ms = np.char.zfill((values % 1000).astype(str), 3)
        left = pc.strftime(stamps, format=head).to_numpy(zero_copy_only=False) if head else ""
        right = pc.strftime(stamps, format=tail).to_numpy(zero_copy_only=False) if tail else ""
        return np.char.add(
            np.char.add(np.asarray(left, dtype=str), ms), np.asarray(right, dtype=str)
        ).astype(object)
    return pc.strftime(stamps, format=fmt).to_numpy(zero_copy_only=False)


def parse_to_millis(strings, pattern: str):
    """Parse strings with a Java pattern (UTC) -> int64 epoch millis."""
    if np.ndim(strings) == 0:
        return int(parse_to_millis(np.atleast_1d(np.asarray(strings, dtype=object)), pattern)[0])
    fmt = java_to_strftime(pattern).replace("\x00MS\x00", "")
    arr = pa.array(np.asarray(strings, dtype=object), type=pa.string())
    try:
        parsed = pc.strptime(arr, format=fmt, unit="ms")
    except pa.ArrowInvalid as err:
        raise QueryExecutionError(f"cannot parse date with format '{pattern}': {err}") from err
    return parsed.cast(pa.int64()).to_numpy(zero_copy_only=False)


def _floor_div(a, ms: int):
    return np.floor_divide(np.asarray(a, dtype=np.int64), ms)


_LONG = "LONG"


@register("toepochseconds", 1, 1, _LONG)
def to_epoch_seconds(millis):
    return _floor_div(millis, 1000)


@register("toepochminutes", 1, 1, _LONG)
def to_epoch_minutes(millis):
    return _floor_div(millis, 60_000)


@register("toepochhours", 1, 1, _LONG)
def to_epoch_hours(millis):
    return _floor_div(millis, 3_600_000)


@register("toepochdays", 1, 1, _LONG)
def to_epoch_days(millis):
    return _floor_div(millis, 86_400_000)


def _from_epoch(ms: int):
    def impl(value):
        return np.asarray(value, dtype=np.int64) * ms

    return impl


register("fromepochseconds", 1, 1, _LONG)(_from_epoch(1000))
register("fromepochminutes", 1, 1, _LONG)(_from_epoch(60_000))
register("fromepochhours", 1, 1, _LONG)(_from_epoch(3_600_000))
register("fromepochdays", 1, 1, _LONG)(_from_epoch(86_400_000))


@register("todatetime", 2, 3, "STRING")
def to_date_time(millis, pattern, timezone="UTC"):
    if str(timezone).upper() not in {"UTC", "GMT", "Z"}:
        raise QueryValidationError(f"ToDateTime: only UTC is supported, got time zone '{timezone}'")
    return format_millis(millis, str(pattern))


@register("fromdatetime", 2, 2, _LONG)
def from_date_time(strings, pattern):
    return parse_to_millis(strings, str(pattern))


@register("now", 0, 0, _LONG)
def now():
    return int(time.time() * 1000)


_ISO = re.compile(
    r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


@register("ago", 1, 1, _LONG)
def ago(duration):
    """Now minus an ISO-8601 duration (``PT1H``, ``P1D``, ``P2DT3H``), in epoch millis."""
    match = _ISO.match(str(duration))
    if not match or not any(match.groupdict().values()):
        raise QueryValidationError(f"AGO: invalid ISO-8601 duration '{duration}'")
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    ms = ((parts["d"] * 24 + parts["h"]) * 60 + parts["m"]) * 60_000 + parts["s"] * 1000
    return int(time.time() * 1000 - ms)


_TRUNC_UNITS = {"MILLISECOND": "ms", "SECOND": "s", "MINUTE": "m", "HOUR": "h", "DAY": "D",
                "MONTH": "M", "YEAR": "Y"}  # fmt: skip


@register("datetrunc", 2, 5, _LONG)
def date_trunc(unit, value, input_unit="MILLISECONDS", timezone="UTC", output_unit=None):
    """Truncate ``value`` (in ``input_unit`` since epoch, UTC) down to the start of its
    ``unit`` (second ... year; weeks start on Monday), returned in ``output_unit``
    (default: ``input_unit``)."""
    if str(timezone).upper() not in {"UTC", "GMT", "Z"}:
        raise QueryValidationError(f"DATETRUNC: only UTC is supported, got time zone '{timezone}'")
    in_ms = unit_ms(input_unit)
    out_ms = unit_ms(output_unit or input_unit)
    millis = np.asarray(value, dtype=np.int64)
    if in_ms != 1:
        millis = millis * in_ms
    key = str(unit).upper()
    fixed = {
        "MILLISECOND": 1,
        "SECOND": 1000,
        "MINUTE": 60_000,
        "HOUR": 3_600_000,
        "DAY": 86_400_000,
    }
    if key in fixed:  # fixed-length units: integer arithmetic, no calendar
        step = fixed[key]
        truncated = (millis // step) * step  # floor division: right for negatives too
    elif key == "WEEK":
        days = np.floor_divide(millis, 86_400_000)
        truncated = (np.floor_divide(days + 3, 7) * 7 - 3) * 86_400_000  # 1970-01-01 is a Thursday
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
        raise QueryValidationError(f"DATETRUNC: unknown unit '{unit}'")
    return truncated if out_ms == 1 else np.floor_divide(truncated, out_ms)


class DateTimeFormat:
    """A Pinot dateTimeFieldSpec format: ``1:MILLISECONDS:EPOCH``, ``1:DAYS:SIMPLE_DATE_FORMAT:
    yyyyMMdd``, the pipe forms ``EPOCH|MILLISECONDS|1`` / ``SIMPLE_DATE_FORMAT|yyyy-MM-dd``, or
    ``TIMESTAMP``."""

    def __init__(self, spec: str):
        self.spec = spec
        self.pattern: str | None = None
        if "|" in spec:
            parts = spec.split("|")
            kind = parts[0].upper()
            if kind == "EPOCH":
                self.size_ms = unit_ms(parts[1] if len(parts) > 1 else "MILLISECONDS") * (
                    int(parts[2]) if len(parts) > 2 else 1
                )
            elif kind == "SIMPLE_DATE_FORMAT":
                self.pattern = parts[1] if len(parts) > 1 else "yyyy-MM-dd'T'HH:mm:ss"
            elif kind != "TIMESTAMP":
                raise QueryValidationError(f"Invalid datetime format '{spec}'")
            self.kind = kind
            if kind == "TIMESTAMP":
                self.size_ms = 1
            return
        parts = spec.split(":", 3)
        if len(parts) == 1 and parts[0].upper() == "TIMESTAMP":
            self.kind, self.size_ms = "EPOCH", 1
            return
        if len(parts) < 3:
            raise QueryValidationError(f"Invalid datetime format '{spec}'")
        self.kind = parts[2].upper()
        try:
            self.size_ms = int(parts[0]) * unit_ms(parts[1])
        except ValueError as err:
            raise QueryValidationError(f"Invalid datetime format '{spec}'") from err
        if self.kind == "SIMPLE_DATE_FORMAT":
            self.pattern = parts[3] if len(parts) > 3 else "yyyy-MM-dd'T'HH:mm:ss"
        elif self.kind not in {"EPOCH", "TIMESTAMP"}:
            raise QueryValidationError(f"Invalid datetime format '{spec}'")

    @property
    def is_string(self) -> bool:
        return self.pattern is not None

    def to_millis(self, values):
        if self.pattern is not None:
            return parse_to_millis(values, self.pattern)
        return np.asarray(
            as_float(values) * self.size_ms
            if np.asarray(values).dtype.kind == "f"
            else np.asarray(values, dtype=np.int64) * self.size_ms,
            dtype=np.int64,
        )

    def from_millis(self, millis):
        if self.pattern is not None:
            return format_millis(millis, self.pattern)
        return np.floor_divide(np.asarray(millis, dtype=np.int64), self.size_ms)


def granularity_ms(spec: str) -> int:
    """``15:MINUTES`` -> 900000."""
    parts = str(spec).split(":")
    if len(parts) != 2:
        raise QueryValidationError(f"Invalid granularity '{spec}', expected e.g. '1:HOURS'")
    try:
        return int(parts[0]) * unit_ms(parts[1])
    except ValueError as err:
        raise QueryValidationError(f"Invalid granularity '{spec}'") from err


def _dtc_type(arg_types: list[str]) -> str:
    return "UNKNOWN"  # resolved by the planner from the output format literal


@register("datetimeconvert", 4, 4, _dtc_type)
def date_time_convert(values, input_format, output_format, granularity):
    """Convert ``values`` from ``input_format`` to ``output_format``, bucketed down to
    ``granularity`` (bucket start inclusive)."""
    source = DateTimeFormat(str(input_format))
    target = DateTimeFormat(str(output_format))
    bucket = granularity_ms(str(granularity))
    millis = source.to_millis(values)
    millis = np.floor_divide(millis, bucket) * bucket
    return target.from_millis(millis)


@register("timeconvert", 3, 3, _LONG)
def time_convert(value, from_unit, to_unit):
    """``value`` counted in ``from_unit`` since epoch, re-counted in ``to_unit`` (floored)."""
    return np.floor_divide(np.asarray(value, dtype=np.int64) * unit_ms(from_unit), unit_ms(to_unit))
