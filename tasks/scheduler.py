"""Cron scheduling of minion tasks: every table whose ``task.taskTypeConfigsMap.<Type>`` has a
Quartz ``schedule`` gets an APScheduler job on the lead controller that schedules that type on
that table (as ``POST /tasks/schedule`` would, triggeredBy CRON_TRIGGER).

Unlike Pinot before PR #10338's advice, a ``schedule`` works with no extra switch
(``SPRIG_TASK_SCHEDULER_ENABLED`` turns cron off). The jobs are rebuilt from the table configs
on every sync, so they follow config changes and a new leader, and survive restarts. Late
fires: with ``controller.task.skipLateCronSchedule`` a fire more than
``maxCronScheduleDelayInSeconds`` late is skipped; otherwise it runs however late (once).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable

from apscheduler.events import EVENT_JOB_MISSED
from apscheduler.schedulers.background import BackgroundScheduler
from django.conf import settings
from django.db import close_old_connections

from tasks.cron import CronError, quartz_trigger
from tasks.generators.base import table_task_config
from tasks.logic.generate import SCHEDULE_KEY
from tasks.logic.scheduled_runs import CRON, recorded_run
from tasks.tables import table_rows

log = logging.getLogger(__name__)

JobKey = tuple[str, str]  # (tableNameWithType, taskType): Quartz's job name and group


def configured_schedules() -> tuple[dict[JobKey, str], dict[JobKey, str]]:
    """({(table, type): cron expression}, {(table, type): error}) from the table configs."""
    schedules, errors = {}, {}
    for row in table_rows():
        task_map = (row.config.get("task") or {}).get("taskTypeConfigsMap") or {}
        for task_type in task_map:
            expression = (table_task_config(row.config, task_type) or {}).get(SCHEDULE_KEY)
            if not expression:
                continue
            key = (row.name_with_type, task_type)
            try:
                quartz_trigger(expression)
            except CronError as exc:
                errors[key] = f"Invalid task config '{task_type}.{SCHEDULE_KEY}': {exc}"
                continue
            schedules[key] = expression
    return schedules, errors


def _job_id(key: JobKey) -> str:
    return f"{key[1]}/{key[0]}"


class CronScheduler:
    """The lead controller's cron jobs. ``fire(table, type)`` does the scheduling."""

    def __init__(self, fire: Callable[[str, str], object]):
        self.fire = fire
        self._lock = threading.Lock()
        self._scheduler: BackgroundScheduler | None = None
        self._jobs: dict[JobKey, str] = {}
        self.started_at: dt.datetime | None = None
        self.errors: dict[JobKey, str] = {}
        self.missed = 0

    @property
    def running(self) -> bool:
        return self._scheduler is not None and self._scheduler.running

    def sync(self) -> None:
        """Make the jobs match the table configs (start the scheduler first if needed)."""
        desired, self.errors = configured_schedules()
        with self._lock:
            if self._scheduler is None:
                self._scheduler = BackgroundScheduler(daemon=True, timezone=dt.UTC)
                self._scheduler.add_listener(self._on_missed, EVENT_JOB_MISSED)
                self._scheduler.start()
                self.started_at = dt.datetime.now(dt.UTC)
            for key in set(self._jobs) - set(desired):
                self._scheduler.remove_job(_job_id(key))
                del self._jobs[key]
                log.info("cron job for %s on %s removed", key[1], key[0])
            for key, expression in desired.items():
                if self._jobs.get(key) == expression:
                    continue
                skip = settings.TASK_SKIP_LATE_CRON_SCHEDULE
                self._scheduler.add_job(
                    self._run, quartz_trigger(expression), args=list(key), id=_job_id(key),
                    replace_existing=True, coalesce=True, max_instances=1,
                    misfire_grace_time=settings.TASK_MAX_CRON_SCHEDULE_DELAY_S if skip else None,
                )  # fmt: skip
                self._jobs[key] = expression
                log.info("cron job for %s on %s: %s", key[1], key[0], expression)

    def stop(self) -> None:
        """Drop every job (this controller no longer leads)."""
        with self._lock:
            if self._scheduler is not None:
                self._scheduler.shutdown(wait=False)
            self._scheduler = None
            self._jobs = {}
            self.started_at = None

    def _on_missed(self, event) -> None:
        self.missed += 1
        log.warning("cron job %s skipped: it was later than the maximum delay", event.job_id)

    def _run(self, table: str, task_type: str) -> None:
        close_old_connections()
        try:
            with recorded_run(CRON, f"{table}/{task_type}"):
                self.fire(table, task_type)
        except Exception:  # one failed fire must not stop the job
            log.exception("cron run of %s on %s failed", task_type, table)
        finally:
            close_old_connections()
