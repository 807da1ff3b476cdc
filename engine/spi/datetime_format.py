"""Pinot date-time formats (``dateTimeFieldSpecs[].format``) and their conversion to epoch ms.

Formats are ``size:UNIT:EPOCH``, ``size:UNIT:TIMESTAMP``, ``size:UNIT:SIMPLE_DATE_FORMAT:pattern``
or the newer pipe form ``EPOCH|MILLISECONDS|1``, ``SIMPLE_DATE_FORMAT|yyyy-MM-dd``,
``TIMESTAMP``. Patterns are Java/Joda patterns, read by ``engine.spi.datetime_pattern``.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.common.errors import ConfigError
from engine.spi.datetime_pattern import (
    InvalidPatternError,
    check_pattern,
    check_timezone,
    format_java_datetime,
    parse_java_datetime,
)

__all__ = ["UNIT_MILLIS", "DateTimeFormat", "format_java_datetime", "parse_java_datetime"]

_TZ_SUFFIX = re.compile(r"(.*\S)\s+tz\(([^)]+)\)\s*")  # Pinot's "pattern tz(zone id)"

UNIT_MILLIS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}


@dataclasses.dataclass(frozen=True)
class DateTimeFormat:
    """A parsed date-time format. ``unit_millis`` is the size of one unit in milliseconds
    (``size * UNIT``); ``pattern`` is the Java pattern for SIMPLE_DATE_FORMAT, read in
    ``timezone`` (``yyyyMMdd tz(America/Los_Angeles)`` or ``SIMPLE_DATE_FORMAT|yyyyMMdd|
    America/Los_Angeles``; UTC when not given)."""

    kind: str  # EPOCH | TIMESTAMP | SIMPLE_DATE_FORMAT
    unit: str
    size: int
    pattern: str | None = None
    timezone: str | None = None

    @property
    def unit_millis(self) -> float:
        return self.size * UNIT_MILLIS[self.unit]

    @property
    def time_unit(self) -> str:
        """The unit stored values are in (MILLISECONDS for TIMESTAMP and date strings)."""
        return self.unit if self.kind == "EPOCH" else "MILLISECONDS"

    @classmethod
    def parse(cls, text: str, field: str = "format") -> DateTimeFormat:
        """Parse a Pinot format string; raises ConfigError naming ``field`` when malformed."""
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(field, f"expected a date-time format string, got {text!r}")
        text = text.strip()
        try:
            if "|" in text or text.upper() in ("TIMESTAMP", "EPOCH"):
                fmt = cls._parse_pipe(text)
            else:
                fmt = cls._parse_colon(text)
            if fmt.pattern is not None:
                check_pattern(fmt.pattern, parsing=True)
                check_timezone(fmt.timezone)
            return fmt
        except InvalidPatternError as exc:
            raise ConfigError(field, str(exc)) from exc
        except (ValueError, KeyError, IndexError) as exc:
            raise ConfigError(field, f"invalid date-time format {text!r}: {exc}") from exc

    @classmethod
    def _parse_colon(cls, text: str) -> DateTimeFormat:
        parts = text.split(":", 3)
        size, unit, kind = int(parts[0]), parts[1].upper(), parts[2].upper()
        if unit not in UNIT_MILLIS:
            raise ValueError(f"unknown time unit {parts[1]!r}")
        if kind == "SIMPLE_DATE_FORMAT":
            if len(parts) < 4 or not parts[3]:
                raise ValueError("SIMPLE_DATE_FORMAT needs a pattern")
            zoned = _TZ_SUFFIX.fullmatch(parts[3])
            if zoned:
                return cls("SIMPLE_DATE_FORMAT", "MILLISECONDS", 1, zoned[1], zoned[2].strip())
            return cls("SIMPLE_DATE_FORMAT", "MILLISECONDS", 1, parts[3])
        if kind not in ("EPOCH", "TIMESTAMP"):
            raise ValueError(f"unknown format type {parts[2]!r}")
        if kind == "TIMESTAMP":
            return cls("TIMESTAMP", "MILLISECONDS", 1)
        return cls(kind, unit, size)

    @classmethod
    def _parse_pipe(cls, text: str) -> DateTimeFormat:
        parts = text.split("|")
        kind = parts[0].upper()
        if kind == "TIMESTAMP":
            return cls("TIMESTAMP", "MILLISECONDS", 1)
        if kind == "EPOCH":
            unit = parts[1].upper() if len(parts) > 1 else "MILLISECONDS"
            if unit not in UNIT_MILLIS:
                raise ValueError(f"unknown time unit {parts[1]!r}")
            size = int(parts[2]) if len(parts) > 2 else 1
            return cls("EPOCH", unit, size)
        if kind == "SIMPLE_DATE_FORMAT":
            if len(parts) < 2 or not parts[1]:
                raise ValueError("SIMPLE_DATE_FORMAT needs a pattern")
            timezone = parts[2].strip() if len(parts) > 2 and parts[2].strip() else None
            return cls("SIMPLE_DATE_FORMAT", "MILLISECONDS", 1, parts[1], timezone)
        raise ValueError(f"unknown format type {parts[0]!r}")

    def to_millis(self, values):
        """Values in this format as int64 epoch milliseconds. An Arrow array gives an Arrow
        array (nulls stay null); a numpy array or list gives a numpy array. Epoch values in
        units finer than a millisecond are floored."""
        if self.kind == "SIMPLE_DATE_FORMAT":
            return _like(values, parse_java_datetime(values, self.pattern or "", self.timezone))
        factor = self.unit_millis if self.kind == "EPOCH" else 1

        def convert(raw: np.ndarray) -> np.ndarray:
            if raw.dtype.kind in "iub" and factor == int(factor):
                return raw.astype(np.int64, copy=False) * int(factor)
            return np.floor(raw.astype(np.float64) * factor).astype(np.int64)

        return _apply(values, convert)

    def from_millis(self, millis):
        """int64 epoch milliseconds in this format (floor division for EPOCH units), Arrow
        in, Arrow out; numpy in, numpy out."""
        if self.kind == "SIMPLE_DATE_FORMAT":
            return _like(millis, format_java_datetime(millis, self.pattern or "", self.timezone))
        factor = self.unit_millis if self.kind == "EPOCH" else 1

        def convert(raw: np.ndarray) -> np.ndarray:
            raw = raw.astype(np.int64, copy=False)
            if factor == int(factor):
                return raw if factor == 1 else np.floor_divide(raw, int(factor))
            return np.floor(raw / factor).astype(np.int64)

        return _apply(millis, convert)


def _apply(values, convert):
    """Run a numpy kernel over Arrow (keeping nulls) or numpy input."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        return convert(np.asarray(values))
    if pa.types.is_timestamp(values.type):
        values = values.cast(pa.timestamp("ms")).view(pa.int64())
    elif not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        values = pc.cast(values, pa.float64())  # numbers read as text; bad text raises here
    raw = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(convert(raw), pa.int64(), mask=mask)


def _like(values, result: pa.Array):
    """``result`` as numpy when the caller passed numpy (or a list)."""
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return result
    return result.to_numpy(zero_copy_only=False)
