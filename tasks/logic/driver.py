"""The task driver's pass, run by the lead controller every TASK_DRIVER_INTERVAL_S: mirror the
minions' reports, time out and retry attempts, send waiting subtasks, and expire old tasks so
the store does not grow without bound (Pinot PR #17741)."""

from __future__ import annotations

import logging

from django.conf import settings

from engine.clusterstate import ClusterStore
from engine.common.clock import now_ms
from tasks.logic.dispatch import dispatch_waiting
from tasks.logic.sync import refresh_task_states, sync_in_flight
from tasks.models import Task
from tasks.states import TaskState

log = logging.getLogger(__name__)


def tick(store: ClusterStore) -> None:
    touched = sync_in_flight()
    refresh_task_states(None)
    if touched:
        refresh_task_states(touched)
    dispatch_waiting(store)


def expire_tasks(now: int | None = None) -> int:
    """Delete finished tasks: COMPLETED ones after controller.task.expire.time.ms (24h),
    the other terminal states after controller.task.terminalState.expire.time.ms (72h)."""
    now = now or now_ms()
    done = Task.objects.filter(finish_ms__isnull=False)
    deleted, _ = done.filter(
        state=TaskState.COMPLETED.value, finish_ms__lt=now - settings.TASK_EXPIRE_TIME_MS
    ).delete()
    other, _ = (
        done.exclude(state__in=[TaskState.COMPLETED.value, TaskState.STOPPED.value])
        .filter(finish_ms__lt=now - settings.TASK_TERMINAL_STATE_EXPIRE_TIME_MS)
        .delete()
    )
    if deleted or other:
        log.info("expired %d finished task row(s)", deleted + other)
    return deleted + other
