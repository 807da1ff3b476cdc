"""Pinot's period strings (``7d``, ``6h``, ``30m``, ``10s``, ``500ms``, ``1d2h``)."""

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
