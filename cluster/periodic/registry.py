"""The periodic-task registry and the one way to run a task (scheduled or on demand)."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings

from cluster import models
from cluster.errors import BadRequest, NotFound
from cluster.logic.cluster_view import table_types
from cluster.periods import period_ms
from engine.clusterstate import ClusterStore, split_table_name

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PeriodicTask:
    name: str
    run: Callable[[ClusterStore, list[models.TableConfig]], dict]
    default_frequency: str = "1h"
    description: str = ""


_tasks: dict[str, PeriodicTask] = {}
_lock = threading.Lock()
_last_runs: dict[str, dict] = {}


def register(task: PeriodicTask) -> None:
    """Add (or replace) a task by name."""
    with _lock:
        _tasks[task.name] = task


def task_names() -> list[str]:
    with _lock:
        return list(_tasks)


def get_task(name: str) -> PeriodicTask:
    with _lock:
        task = _tasks.get(name)
    if task is None:
        raise BadRequest(f"Unknown periodic task '{name}'; known tasks: {', '.join(task_names())}")
    return task


def frequency_seconds(task: PeriodicTask) -> float:
    text = settings.PERIODIC_TASK_FREQUENCIES.get(task.name, task.default_frequency)
    return period_ms(text) / 1000.0


def _rows(table_name: str | None, table_type: str | None) -> list[models.TableConfig]:
    if not table_name:
        return list(models.TableConfig.objects.all())
    raw = split_table_name(table_name)[0]
    types = table_types(table_name, table_type)
    if not types:
        raise NotFound(f"Table {table_name} does not exist")
    return list(models.TableConfig.objects.filter(table_name=raw, table_type__in=types))


def run_task(
    store: ClusterStore, name: str, table_name: str | None = None, table_type: str | None = None
) -> dict:
    """Run one task now over every table (or one table) and return its report."""
    task = get_task(name)
    rows = _rows(table_name, table_type)
    started = time.monotonic()
    report = task.run(store, rows)
    took = round(time.monotonic() - started, 3)
    log.info("periodic task %s ran over %d table(s) in %.3fs", name, len(rows), took)
    with _lock:
        _last_runs[name] = {"report": report, "seconds": took, "tables": len(rows)}
    return report


def last_run(name: str) -> dict | None:
    with _lock:
        return _last_runs.get(name)
