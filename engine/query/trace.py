"""Per-segment operator timings of a traced query (``trace: true`` in the broker request, or
the ``trace`` query option), Pinot's ``traceInfo``.

A traced query's segments each record how long each stage took (prune, filter, the
aggregation / group-by / selection); the server adds its own stages (planning, combine) and
the broker files everything under the server that answered. Untraced queries pay one flag
test per segment: the timer is only created when the plan asks for a trace.
"""

from __future__ import annotations

import gc
import threading
import time


def new_trace() -> dict:
    """An empty trace: ``segments`` (one entry per segment) and the server's ``operators``."""
    return {"segments": [], "operators": []}


def merge_traces(traces: list[dict | None]) -> dict | None:
    """One trace holding every segment and operator of ``traces`` (None when none traced)."""
    present = [t for t in traces if t is not None]
    if not present:
        return None
    out = new_trace()
    for trace in present:
        out["segments"].extend(trace.get("segments", ()))
        out["operators"].extend(trace.get("operators", ()))
    return out


def operator_entry(operator: str, seconds: float) -> dict:
    """A timing entry; ``timeMs`` is wall-clock milliseconds with microsecond precision."""
    return {"operator": operator, "timeMs": round(seconds * 1000.0, 3)}


class StageTimer:
    """Times consecutive stages: ``mark(name)`` closes the stage that ran since the previous
    mark (or since the timer was created)."""

    __slots__ = ("_last", "_started", "operators")

    def __init__(self) -> None:
        self.operators: list[dict] = []
        self._started = self._last = time.perf_counter()

    def mark(self, operator: str) -> None:
        now = time.perf_counter()
        self.operators.append(operator_entry(operator, now - self._last))
        self._last = now

    def total_ms(self) -> float:
        return round((time.perf_counter() - self._started) * 1000.0, 3)


class GcClock:
    """Milliseconds this process has spent in garbage collection, by generation, counted by a
    ``gc.callbacks`` hook (two clock reads per collection). A collection stops every thread,
    so a query that overlaps one waits for it: a traced query reports the pause it met."""

    def __init__(self) -> None:
        self.pause_ms = [0.0, 0.0, 0.0]
        self.collections = [0, 0, 0]
        self._started = 0.0

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            generation = info.get("generation", 2)
            self.pause_ms[generation] += (time.perf_counter() - self._started) * 1000.0
            self.collections[generation] += 1

    def total_ms(self) -> float:
        return sum(self.pause_ms)


_gc_clock: GcClock | None = None
_gc_lock = threading.Lock()


def gc_clock() -> GcClock:
    """The process's GcClock, hooked into ``gc.callbacks`` on first use."""
    global _gc_clock
    with _gc_lock:
        if _gc_clock is None:
            _gc_clock = GcClock()
            gc.callbacks.append(_gc_clock._on_gc)
        return _gc_clock
