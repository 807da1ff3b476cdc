"""Pinot's period strings (``7d``, ``6h``, ``30m``, ``10s``, ``500ms``) and data sizes (``140G``)."""

from __future__ import annotations

import re

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def period_ms(text: str) -> int:
    """The length of a period string in milliseconds; ValueError naming the bad text."""
    compact = re.sub(r"\s+", "", str(text)).lower()
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", compact)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != compact:
        raise ValueError(f"invalid period {text!r}; use e.g. 7d, 6h, 30m, 10s")
    return sum(int(n) * _UNITS_MS[u] for n, u in parts)


_SIZE_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def data_size_bytes(text: str) -> int:
    """Pinot's data sizes (``quota.storage``): ``140G``, ``500M``, ``10.5K``, ``2048``; binary
    units, an optional trailing ``B``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)B?\s*", str(text), re.IGNORECASE)
    if match is None:
        raise ValueError(f"invalid data size {text!r}; use e.g. 140G, 500M, 10K")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])
