"""Pinot date-time formats (``dateTimeFieldSpecs[].format``) and their conversion to epoch ms.

Formats are ``size:UNIT:EPOCH``, ``size:UNIT:TIMESTAMP``, ``size:UNIT:SIMPLE_DATE_FORMAT:pattern``
or the newer pipe form ``EPOCH|MILLISECONDS|1``, ``SIMPLE_DATE_FORMAT|yyyy-MM-dd``,
``TIMESTAMP``. Patterns use Java/Joda letters and are translated to strptime codes.
"""

from __future__ import annotations

import dataclasses
import re

import pyarrow as pa
import pyarrow.compute as pc

from engine.common.errors import ConfigError

UNIT_MILLIS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}

# Java/Joda pattern letter runs -> strptime codes. Longest runs first.
_JAVA_TO_STRPTIME = [
    ("yyyy", "%Y"),
    ("YYYY", "%Y"),
    ("yy", "%y"),
    ("MMMM", "%B"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("M", "%m"),
    ("dd", "%d"),
    ("d", "%d"),
    ("HH", "%H"),
    ("H", "%H"),
    ("hh", "%I"),
    ("h", "%I"),
    ("mm", "%M"),
    ("m", "%M"),
    ("ss", "%S"),
    ("s", "%S"),
    ("a", "%p"),
    ("EEEE", "%A"),
    ("EEE", "%a"),
    ("ZZ", "%z"),
    ("Z", "%z"),
    ("XXX", "%z"),
    ("X", "%z"),
]


@dataclasses.dataclass(frozen=True)
class DateTimeFormat:
    """A parsed date-time format. ``unit_millis`` is the size of one unit in milliseconds
    (``size * UNIT``); ``pattern`` is the Java pattern for SIMPLE_DATE_FORMAT."""

    kind: str  # EPOCH | TIMESTAMP | SIMPLE_DATE_FORMAT
    unit: str
    size: int
    pattern: str | None = None

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
                return cls._parse_pipe(text)
            return cls._parse_colon(text)
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
            return cls("SIMPLE_DATE_FORMAT", "MILLISECONDS", 1, parts[1])
        raise ValueError(f"unknown format type {parts[0]!r}")

    def to_millis(self, values: pa.Array) -> pa.Array:
        """Convert an Arrow array in this format to int64 epoch milliseconds (nulls stay)."""
        if self.kind == "SIMPLE_DATE_FORMAT":
            return parse_java_datetime(values, self.pattern or "")
        if self.kind == "TIMESTAMP":
            return pc.cast(values, pa.int64())
        factor = self.unit_millis
        as_float = pc.multiply(pc.cast(values, pa.float64()), factor)
        return pc.cast(pc.floor(as_float), pa.int64())

    def from_millis(self, millis: pa.Array) -> pa.Array:
        """Convert int64 epoch milliseconds to this format (floor division for EPOCH units)."""
        if self.kind == "SIMPLE_DATE_FORMAT":
            return format_java_datetime(millis, self.pattern or "")
        if self.kind == "TIMESTAMP":
            return pc.cast(millis, pa.int64())
        factor = self.unit_millis
        return pc.cast(pc.floor(pc.divide(pc.cast(millis, pa.float64()), factor)), pa.int64())


def java_pattern_to_strptime(pattern: str) -> str:
    """Translate a Java SimpleDateFormat/Joda pattern to a strptime format.
    Quoted text ('T', and '' for a quote) becomes literal text."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            end = pattern.find("'", i + 1)
            if end == i + 1:  # '' is a literal quote
                out.append("'")
                i += 2
                continue
            if end < 0:
                raise ValueError(f"unterminated quote in {pattern!r}")
            out.append(pattern[i + 1 : end].replace("%", "%%"))
            i = end + 1
            continue
        if ch == "S":  # fraction of a second; handled by the caller's fractional parsing
            run = len(re.match(r"S+", pattern[i:]).group(0))
            out.append("%f" if run else "")
            i += run
            continue
        for java, code in _JAVA_TO_STRPTIME:
            if pattern.startswith(java, i):
                out.append(code)
                i += len(java)
                break
        else:
            if ch.isalpha():
                raise ValueError(f"unsupported pattern letter {ch!r} in {pattern!r}")
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)


def parse_java_datetime(values: pa.Array, pattern: str) -> pa.Array:
    """Parse strings with a Java date pattern into int64 epoch ms (UTC unless the string
    carries an offset). Unparseable strings raise pyarrow.ArrowInvalid."""
    fmt = java_pattern_to_strptime(pattern)
    strings = pc.cast(values, pa.string())
    if "%z" in fmt:
        # Joda's Z accepts a literal "Z" for UTC; strptime wants "+0000".
        strings = pc.replace_substring_regex(strings, r"Z$", "+0000")
    if "%f" in fmt:
        # Arrow's strptime has no %f; parse the fraction separately.
        head, _, tail = fmt.partition("%f")
        parsed = pc.strptime(
            pc.replace_substring_regex(strings, r"\.(\d+)", ""),
            format=head.rstrip(".") + tail,
            unit="ms",
        )
        frac = pc.extract_regex(strings, r"\.(?P<f>\d{1,3})")
        millis = pc.cast(pc.utf8_rpad(pc.struct_field(frac, [0]), 3, "0"), pa.int64())
        return pc.add(pc.cast(parsed, pa.int64()), pc.fill_null(millis, 0))
    return pc.cast(pc.strptime(strings, format=fmt, unit="ms"), pa.int64())


def format_java_datetime(millis: pa.Array, pattern: str) -> pa.Array:
    """Format int64 epoch ms as strings with a Java date pattern (UTC)."""
    fmt = java_pattern_to_strptime(pattern)
    ts = pc.cast(pc.cast(millis, pa.int64()), pa.timestamp("ms", tz="UTC"))
    if "%f" in fmt:
        # Arrow's %S on a millisecond timestamp prints "SS.fff": it stands for "ss.SSS".
        fmt = fmt.replace("%S.%f", "%S").replace("%f", "")
    else:
        ts = pc.cast(ts, pa.timestamp("s", tz="UTC"), safe=False)
    return pc.strftime(ts, format=fmt.replace("%z", "+0000"))
