"""Pinot's period strings and data sizes: one reading for the controller, the minions and the
engine processes.

A period (Pinot's ``TimeUtils.convertPeriodToMillis``: ``realtime.segment.flush.threshold.time``,
a task's ``bucketTimePeriod``, a periodic task's frequency) is ``<whole number><unit>`` parts,
units ``d``, ``h``, ``m``, ``s`` in either case: ``1d``, ``4h30m``. An unsigned period that Pinot
reads has the same length here. Beyond Pinot: ``ms`` parts, parts in any order or repeated (they add up)
and blanks. Refused as in Pinot: ISO-8601 durations (``P1D``, ``PT1H``), fractions, other units.
Refused unlike Pinot: a sign (Pinot's ``-1d`` is a negative period) and an empty text (Pinot's
0), both mistakes in every config that takes a period.

A data size (Pinot's ``DataSizeUtils.toBytes``: ``quota.storage``,
``realtime.segment.flush.threshold.segment.size``) is a number with an optional fraction, an
optional binary unit ``K``, ``M``, ``G``, ``T`` or ``P`` and an optional ``B``, in either case:
``140G``, ``10.5K``, ``40B``, ``2048``. Beyond Pinot: blanks around the number and the unit.
"""

from __future__ import annotations

import re

_PERIOD_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def period_ms(text: str) -> int:
    """The length of a period in milliseconds; ValueError naming the text if it is not one."""
    compact = re.sub(r"\s+", "", str(text)).lower()
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"invalid period {text!r}; use e.g. 7d, 4h30m, 10m, 30s")
    return sum(int(n) * _PERIOD_UNITS_MS[u] for n, u in parts)


def data_size_bytes(text: str) -> int:
    """A data size in bytes, rounded down as Pinot does; ValueError naming the text if it is
    not one."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)B?\s*", str(text), re.IGNORECASE)
    if match is None:
        raise ValueError(f"invalid data size {text!r}; use e.g. 140G, 200M, 10.5K")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])
