"""Record a scheduled run (periodic task or cron fire): when it started, how long it took,
whether it succeeded."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

from django.db.models import F

from controller.errors import ControllerError, public_error
from engine.common.clock import now_ms
from tasks.models import ScheduledRun

log = logging.getLogger(__name__)

PERIODIC = "periodic"
CRON = "cron"


class RunFailed(Exception):
    """A recorded run failed; its text is what the run's record says, and callers may show
    (``controller.errors.public_error``). The exception that failed it is the cause."""


@contextlib.contextmanager
def recorded_run(kind: str, name: str) -> Iterator[None]:
    """Record the block as one run. A ControllerError is recorded with its message and
    re-raised; any other exception is logged with its traceback under an error id, recorded
    as having failed with that id, and raised as RunFailed. A run's record is served
    (``/periodictask/status``), so it never holds an exception's text."""
    started_ms = now_ms()
    started = time.monotonic()
    error = ""
    try:
        yield
    except ControllerError as exc:
        error = exc.message or type(exc).__name__
        raise
    except Exception as exc:
        error = public_error(log, f"The {kind} run of {name}", exc)
        raise RunFailed(error) from exc
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
