"""The wall clock in epoch milliseconds: the one home of ``now_ms`` for the engine, the
controller, the minions and the benchmarks."""

from __future__ import annotations

import time


def now_ms() -> int:
    """Milliseconds since the Unix epoch (UTC), as Pinot's ``System.currentTimeMillis()``.
    Integer arithmetic on ``time_ns`` costs no more than ``int(time.time() * 1000)``, so hot
    paths call this directly."""
    return time.time_ns() // 1_000_000
