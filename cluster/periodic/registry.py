"""The periodic-task registry and the one way to run a task (scheduled or on demand).

Every run is recorded (start time, duration, outcome) in the controller's database, so every
controller serves the same "last run" for ``GET /periodictask/status``."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings

from cluster import models
from cluster.logic.cluster_view import table_rows
from controller.errors import NotFound
from engine.clusterstate import ClusterStore
from engine.spi.periods import period_ms
from tasks.logic.scheduled_runs import PERIODIC, last_runs, recorded_run

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PeriodicTask:
    name: str
    run: Callable[[ClusterStore, list[models.TableConfig]], dict]
    default_frequency: str = "1h"
    description: str = ""


_tasks: dict[str, PeriodicTask] = {}
_lock = threading.Lock()


def register(task: PeriodicTask) -> None:
    """Add (or replace) a task by name."""
    with _lock:
        _tasks[task.name] = task


def task_names() -> list[str]:
    with _lock:
        return list(_tasks)


def get_task(name: str) -> PeriodicTask:
    """The task; NotFound with Pinot's message for an unknown name."""
    with _lock:
        task = _tasks.get(name)
    if task is None:
        raise NotFound(f"Periodic task '{name}' not found. Known tasks: {', '.join(task_names())}")
    return task


def frequency_text(task: PeriodicTask) -> str:
    return settings.PERIODIC_TASK_FREQUENCIES.get(task.name, task.default_frequency)


def frequency_seconds(task: PeriodicTask) -> float | None:
    """Seconds between scheduled runs; None when the period is negative (Pinot's ``-1s``:
    never scheduled, still runnable through the API)."""
    text = str(frequency_text(task)).strip()
    if text.startswith("-"):
        return None
    return period_ms(text) / 1000.0


def run_task(
    store: ClusterStore, name: str, table_name: str | None = None, table_type: str | None = None
) -> dict:
    """Run one task now over every table (or one table), record the run, return its report."""
    task = get_task(name)
    rows = table_rows(table_name, table_type)
    started = time.monotonic()
    with recorded_run(PERIODIC, name):
        report = task.run(store, rows)
    log.info("periodic task %s ran over %d table(s) in %.3fs", name, len(rows),
             time.monotonic() - started)  # fmt: skip
    return report


def run_status() -> list[dict]:
    """Every task with its frequency and its last recorded run (None fields before one)."""
    runs = last_runs(PERIODIC)
    out = []
    for name in task_names():
        task = get_task(name)
        run = runs.get(name)
        out.append({
            "taskName": name,
            "description": task.description,
            "frequency": str(frequency_text(task)),
            "frequencySeconds": frequency_seconds(task),
            "lastRunTimeMs": run.last_start_ms if run else None,
            "lastRunDurationMs": run.last_duration_ms if run else None,
            "lastRunSuccessful": run.successful if run else None,
            "lastRunError": (run.message or None) if run else None,
            "numberOfRuns": run.runs if run else 0,
        })  # fmt: skip
    return out
