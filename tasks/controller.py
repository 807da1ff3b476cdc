"""The task manager's place in the controller process: the lead controller's driver pass
(reports, retries, dispatch, expiry, cron jobs) and the runs of the two periodic tasks Pinot
lists, PinotTaskManager and TaskMetricsEmitter (cluster.periodic.builtin registers them)."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from controller.zk import get_store
from engine.clusterstate import ClusterStore
from tasks.errors import SchedulingError
from tasks.logic.driver import expire_tasks, tick
from tasks.logic.metrics import task_metrics
from tasks.logic.schedule import schedule_tasks
from tasks.scheduler import CronScheduler
from tasks.states import TriggeredBy

log = logging.getLogger(__name__)

_last_sync = 0.0
_last_expiry = 0.0
EXPIRY_INTERVAL_S = 60.0
_last_broker_warning = 0.0
BROKER_WARNING_INTERVAL_S = 60.0


def _warn_broker_down(exc: Exception) -> None:
    """Redis unreachable: the pass is retried every interval; say so once a minute, not in a
    traceback four times a second."""
    global _last_broker_warning
    now = time.monotonic()
    if now - _last_broker_warning >= BROKER_WARNING_INTERVAL_S:
        _last_broker_warning = now
        log.warning("the minions' broker (Redis) is unreachable; tasks wait until it is "
                    "back: %s", exc)  # fmt: skip


def _cron_fire(table: str, task_type: str) -> None:
    outcome = schedule_tasks(get_store(), task_type=task_type, table_name=table,
                             triggered_by=TriggeredBy.CRON_TRIGGER)  # fmt: skip
    errors = outcome.generation_errors + outcome.scheduling_errors
    if errors:
        raise SchedulingError("; ".join(errors))


cron = CronScheduler(_cron_fire)


def drive(store: ClusterStore, leading: bool) -> None:
    """One pass of the controller's task loop. Only the leader drives tasks and runs cron
    jobs; a controller that stops leading drops its jobs at once."""
    global _last_sync, _last_expiry
    if not leading:
        if cron.running:
            cron.stop()
        return
    try:
        tick(store)
    except (KombuOperationalError, RedisConnectionError) as exc:
        _warn_broker_down(exc)  # cron jobs still record their tasks; they are sent later
    now = time.monotonic()
    if settings.TASK_SCHEDULER_ENABLED and now - _last_sync >= settings.TASK_SCHEDULE_SYNC_S:
        _last_sync = now
        cron.sync()
    if now - _last_expiry >= EXPIRY_INTERVAL_S:
        _last_expiry = now
        expire_tasks()


def pinot_task_manager(store: ClusterStore, rows) -> dict:
    """controller.task.frequencyPeriod: every configured type on every table."""
    report = {}
    for row in rows:
        outcome = schedule_tasks(store, table_name=row.name_with_type,
                                 triggered_by=TriggeredBy.CRON_TRIGGER)  # fmt: skip
        report[row.name_with_type] = outcome.response()
    return report


def task_metrics_emitter(store: ClusterStore, rows) -> dict:
    """Task and subtask counts per type and table."""
    return task_metrics([row.name_with_type for row in rows])
