"""Settings read from the environment once, when a process starts."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from engine.common.errors import ConfigError


def seconds_from_env(name: str, default: float, *, minimum: float = 0.0,
                     maximum: float = math.inf, zero_ok: bool = True,
                     environ: Mapping[str, str] | None = None) -> float:  # fmt: skip
    """The number of seconds in the variable ``name`` (unset or empty: ``default``), in
    ``[minimum, maximum]``, and above 0 unless ``zero_ok``. ConfigError naming the variable
    for anything else (a word, nan, a value out of range)."""
    env = os.environ if environ is None else environ
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        raise ConfigError(name, f"expected a number of seconds, got {raw!r}") from None
    if not minimum <= seconds <= maximum or (seconds == 0 and not zero_ok):  # rejects nan
        low = f"above {minimum:g}" if not zero_ok and minimum == 0 else f"at least {minimum:g}"
        high = "" if maximum == math.inf else f" and at most {maximum:g}"
        raise ConfigError(name, f"must be {low}{high} seconds, got {raw!r}")
    return seconds
