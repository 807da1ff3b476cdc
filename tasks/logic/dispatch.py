"""Hand waiting subtasks to the minions, at most ``numConcurrentTasksPerInstance`` in flight
per live minion of the task's tag (Helix's per-instance throttle). A subtask is waiting while
its state is None and no attempt is on the queue."""

from __future__ import annotations

import logging
from collections import Counter

from django.db.models import F

from engine.clusterstate import ClusterStore
from engine.common.clock import now_ms
from tasks.logic.celery_link import attempt_id, send_attempt
from tasks.models import Subtask, TaskQueue
from tasks.states import BLOCKING_QUEUE_STATES, TERMINAL_SUBTASK_STATES

log = logging.getLogger(__name__)


def live_minions_by_tag(store: ClusterStore) -> Counter:
    """How many live, enabled minions carry each tag."""
    live = store.live_instances()
    counts: Counter = Counter()
    for instance_id, config in store.instance_configs().items():
        if instance_id in live and instance_id.startswith("Minion_") and config.enabled:
            counts.update(set(config.tags))
    return counts


def minion_tags(store: ClusterStore) -> set[str]:
    """Every tag of a registered minion, live or not."""
    return {
        tag
        for instance_id, config in store.instance_configs().items()
        if instance_id.startswith("Minion_")
        for tag in config.tags
    }


def minion_instance_ids(store: ClusterStore) -> list[str]:
    """Every registered minion, live or not."""
    return [
        instance_id for instance_id in store.instance_configs() if instance_id.startswith("Minion_")
    ]


def dispatch_waiting(store: ClusterStore) -> int:
    """Send what capacity allows; returns how many attempts were sent."""
    open_queues = TaskQueue.objects.exclude(state__in=[s.value for s in BLOCKING_QUEUE_STATES])
    waiting = list(
        Subtask.objects.filter(
            state__isnull=True, dispatched_ms__isnull=True, task__queue__in=open_queues
        )
        .select_related("task")
        .order_by("task__created_ms", "task_id", "index")
    )
    if not waiting:
        return 0
    minions = live_minions_by_tag(store)
    in_flight = Counter(
        (row["task__task_type"], row["task__minion_instance_tag"])
        for row in Subtask.objects.filter(dispatched_ms__isnull=False)
        .exclude(state__in=[s.value for s in TERMINAL_SUBTASK_STATES])
        .values("task__task_type", "task__minion_instance_tag")
    )
    sent = 0
    for subtask in waiting:
        task = subtask.task
        key = (task.task_type, task.minion_instance_tag)
        if in_flight[key] >= task.concurrency_per_instance * minions[task.minion_instance_tag]:
            continue
        if _send(subtask):
            in_flight[key] += 1
            sent += 1
    return sent


def _send(subtask: Subtask) -> bool:
    task = subtask.task
    now = now_ms()
    attempt = subtask.attempts + 1
    # claim it first, so two controllers never send the same attempt
    claimed = Subtask.objects.filter(pk=subtask.pk, dispatched_ms__isnull=True).update(
        dispatched_ms=now, attempts=F("attempts") + 1,
        celery_id=attempt_id(subtask.name, attempt),
    )  # fmt: skip
    if not claimed:
        return False
    try:
        send_attempt(
            subtask=subtask.name, task_type=task.task_type, attempt=attempt,
            configs=subtask.configs, queue=task.minion_instance_tag,
            timeout_ms=task.timeout_ms, dispatched_ms=now,
        )  # fmt: skip
    except Exception:
        # the broker is unreachable: give the claim back, the next pass tries again
        Subtask.objects.filter(pk=subtask.pk).update(
            dispatched_ms=None, attempts=F("attempts") - 1, celery_id=""
        )
        raise
    return True
