"""Record a scheduled run (periodic task or cron fire): when it started, how long it took,
whether it succeeded."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from django.db.models import F

from engine.common.clock import now_ms
from tasks.models import ScheduledRun

PERIODIC = "periodic"
CRON = "cron"


@contextlib.contextmanager
def recorded_run(kind: str, name: str) -> Iterator[None]:
    """Record the block as one run; an exception is recorded as the failure and re-raised."""
    started_ms = now_ms()
    started = time.monotonic()
    error = ""
    try:
        yield
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        fields = {"last_start_ms": started_ms, "successful": not error, "message": error[:4000],
                  "last_duration_ms": int((time.monotonic() - started) * 1000)}  # fmt: skip
        updated = ScheduledRun.objects.filter(kind=kind, name=name).update(
            runs=F("runs") + 1, **fields
        )
        if not updated:
            ScheduledRun.objects.get_or_create(kind=kind, name=name, defaults={**fields, "runs": 1})


def last_runs(kind: str) -> dict[str, ScheduledRun]:
    return {run.name: run for run in ScheduledRun.objects.filter(kind=kind)}


def last_run(kind: str, name: str) -> ScheduledRun | None:
    return ScheduledRun.objects.filter(kind=kind, name=name).first()
