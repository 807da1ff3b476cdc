"""Epoch milliseconds as text: one Arrow string column per pattern field, then joined."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.spi.datetime_pattern.syntax import (
    DAYS,
    MONTHS,
    Field,
    check_timezone,
    compile_pattern,
)


def format_java_datetime(millis, pattern: str, timezone: str | None = None) -> pa.Array:
    """Epoch milliseconds (Arrow or numpy int64; Arrow nulls stay null) as text in
    ``pattern``, in ``timezone`` (UTC by default, as Pinot's ``withZoneUTC``)."""
    fields = compile_pattern(pattern)
    zone = check_timezone(timezone)
    millis = _int64_array(millis)
    stamps = millis.view(pa.timestamp("ms", tz=zone))
    parts = _Parts(stamps, millis, zone)
    pieces = [f.text if not f.letter else parts.field(f) for f in fields]
    if not any(isinstance(p, pa.Array) for p in pieces):
        pieces.insert(0, pc.if_else(pc.is_valid(millis), "", pa.scalar(None, pa.string())))
    if len(pieces) == 1:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, "")


class _Parts:
    """Calendar fields of a timestamp column, each computed at most once."""

    def __init__(self, stamps: pa.Array, millis: pa.Array, zone: str):
        self.stamps, self.millis, self.zone = stamps, millis, zone
        self._cache: dict[str, pa.Array] = {}

    def get(self, name: str) -> pa.Array:
        if name not in self._cache:
            if name == "weekday":
                value = pc.day_of_week(self.stamps, count_from_zero=False, week_start=1)
            elif name == "offset_minutes":
                local = pc.local_timestamp(self.stamps).view(pa.int64())
                value = pc.divide(pc.subtract(local, self.millis), 60_000)
            else:
                value = getattr(pc, name)(self.stamps)
            self._cache[name] = pc.cast(value, pa.int64())
        return self._cache[name]

    def field(self, f: Field) -> pa.Array:
        n, letter = f.count, f.letter
        if letter in "yY":
            year = self.get("year")
            return (
                _digits(pc.subtract(year, pc.multiply(pc.divide(year, 100), 100)), 2)
                if n == 2
                else _digits(year, n)
            )
        if letter == "x":
            return _digits(self.get("iso_year"), n)
        if letter == "C":
            return _digits(pc.divide(self.get("year"), 100), n)
        if letter == "G":
            return pc.if_else(pc.greater(self.get("year"), 0), "AD", "BC")
        if letter == "M":
            month = self.get("month")
            return _names(MONTHS, pc.subtract(month, 1), n) if n >= 3 else _digits(month, n)
        if letter in "Ee":
            day = self.get("weekday")
            return _names(DAYS, pc.subtract(day, 1), n) if letter == "E" else _digits(day, n)
        if letter == "a":
            return pc.if_else(pc.less(self.get("hour"), 12), "AM", "PM")
        if letter in "hHkK":
            return _digits(_hour(self.get("hour"), letter), n)
        if letter == "S":
            fraction = _digits(self.get("millisecond"), 3)
            return (
                pc.utf8_slice_codeunits(fraction, 0, n)
                if n <= 3
                else pc.utf8_rpad(fraction, n, "0")
            )
        if letter in "zZX":
            return self._zone_field(letter, n)
        name = {"w": "iso_week", "D": "day_of_year", "d": "day", "m": "minute", "s": "second"}
        return _digits(self.get(name[letter]), n)

    def _zone_field(self, letter: str, n: int):
        if letter == "z" or (letter == "Z" and n >= 3):
            return self.zone
        offset = self.get("offset_minutes")
        sign = pc.if_else(pc.less(offset, 0), "-", "+")
        offset = pc.abs(offset)
        hours, minutes = (
            _digits(pc.divide(offset, 60), 2),
            _digits(pc.subtract(offset, pc.multiply(pc.divide(offset, 60), 60)), 2),
        )
        colon = ":" if (letter == "Z" and n == 2) or (letter == "X" and n >= 3) else ""
        text = pc.binary_join_element_wise(sign, hours, colon, minutes, "")
        if letter == "X":  # Java's ISO offset prints Z for UTC and hours only for one X
            if n == 1:
                text = pc.binary_join_element_wise(sign, hours, "")
            text = pc.if_else(pc.equal(offset, 0), "Z", text)
        return text


def _hour(hour: pa.Array, letter: str) -> pa.Array:
    if letter == "H":
        return hour
    if letter == "k":  # 1-24
        return pc.if_else(pc.equal(hour, 0), 24, hour)
    half = pc.subtract(hour, pc.multiply(pc.divide(hour, 12), 12))
    return half if letter == "K" else pc.if_else(pc.equal(half, 0), 12, half)


def _digits(values: pa.Array, width: int) -> pa.Array:
    text = pc.cast(values, pa.string())
    return pc.utf8_lpad(text, width, "0") if width > 1 else text


def _names(names: list[str], index: pa.Array, count: int) -> pa.Array:
    table = pa.array(names if count >= 4 else [name[:3] for name in names])
    return pc.take(table, index)


def _int64_array(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if pa.types.is_timestamp(values.type):
            values = values.cast(pa.timestamp("ms")).view(pa.int64())
        return values.cast(pa.int64())
    return pa.array(np.asarray(values, dtype=np.int64))
