"""Mirror the minions' reports into the task store, time out silent attempts, retry failed
ones while ``maxAttemptsPerTask`` allows, and derive each task's state from its subtasks."""

from __future__ import annotations

import logging

from celery import states as celery_states

from engine.common.clock import now_ms
from tasks.logic.celery_link import Report, read_report, revoke_attempt
from tasks.models import Subtask, Task
from tasks.states import (
    RETRYABLE_SUBTASK_STATES,
    TERMINAL_SUBTASK_STATES,
    TERMINAL_TASK_STATES,
    SubtaskState,
    task_state_of,
)

log = logging.getLogger(__name__)

# the minion enforces timeoutMs itself and reports TIMED_OUT; the controller waits this much
# longer before it decides the minion is gone (killed, lost its host)
TIMEOUT_GRACE_MS = 5_000
# Pinot caps a subtask's `info` at 1000 characters in the debug API (PR #10287); the full
# traceback stays in the store
INFO_LIMIT = 1000
# of those, at most this much of the first line; a tail that starts mid-line loses at most
# this much more to start at the next line
INFO_HEAD_LIMIT = 200
INFO_LINE_SLACK = 200

_TERMINAL = [s.value for s in TERMINAL_SUBTASK_STATES]


def _apply(subtask: Subtask, report: Report) -> bool:
    """Copy one report into the row; True if the row changed."""
    meta = report.meta
    if report.state in (celery_states.PENDING, celery_states.REVOKED, celery_states.RECEIVED,
                        celery_states.STARTED):  # fmt: skip
        return False
    if report.state == celery_states.SUCCESS:
        state = SubtaskState.COMPLETED
        subtask.result = meta.get("result")
    elif report.state == celery_states.FAILURE:
        timed_out = meta.get("exc_type") == "TimeLimitExceeded"
        # a worker process that died under the attempt is Helix's participant ERROR
        lost = meta.get("exc_type") == "WorkerLostError"
        state = (SubtaskState.TIMED_OUT if timed_out
                 else SubtaskState.ERROR if lost else SubtaskState.TASK_ERROR)  # fmt: skip
        subtask.info = report.traceback or meta.get("error", "")
        subtask.finish_ms = subtask.finish_ms or now_ms()
    else:
        try:
            state = SubtaskState(report.state)
        except ValueError:
            log.warning("subtask %s reported an unknown state %s", subtask.name, report.state)
            return False
        if meta.get("error"):
            subtask.info = meta["error"]
    subtask.state = state.value
    subtask.start_ms = meta.get("startTime") or subtask.start_ms
    subtask.finish_ms = meta.get("finishTime") or subtask.finish_ms
    subtask.worker = meta.get("worker") or subtask.worker
    subtask.progress = meta.get("progress") or subtask.progress
    if state == SubtaskState.COMPLETED and not subtask.finish_ms:
        subtask.finish_ms = now_ms()
    return True


def _time_out(subtask: Subtask, now: int) -> bool:
    started = subtask.start_ms or 0
    if subtask.state != SubtaskState.RUNNING or not started:
        return False
    if now - started <= subtask.task.timeout_ms + TIMEOUT_GRACE_MS:
        return False
    revoke_attempt(subtask.celery_id)
    subtask.state = SubtaskState.TIMED_OUT.value
    subtask.finish_ms = now
    subtask.info = (
        f"no report from minion {subtask.worker or '?'} within the task timeout "
        f"({subtask.task.timeout_ms} ms); the minion was stopped or lost"
    )
    return True


def _retry(subtask: Subtask) -> bool:
    if subtask.state not in RETRYABLE_SUBTASK_STATES:
        return False
    if subtask.attempts >= subtask.task.max_attempts:
        return False
    log.info("retrying subtask %s (attempt %d failed: %s)", subtask.name, subtask.attempts,
             subtask.state)  # fmt: skip
    subtask.state = None
    subtask.dispatched_ms = None
    subtask.start_ms = subtask.finish_ms = None
    subtask.progress = ""
    return True


def sync_in_flight(task_ids: list[int] | None = None) -> set[int]:
    """Pull the reports of every dispatched, unfinished subtask (of ``task_ids`` if given);
    returns the ids of the tasks whose subtasks changed."""
    now = now_ms()
    query = Subtask.objects.filter(dispatched_ms__isnull=False).exclude(state__in=_TERMINAL)
    if task_ids is not None:
        query = query.filter(task_id__in=task_ids)
    touched: set[int] = set()
    for subtask in query.select_related("task"):
        changed = _apply(subtask, read_report(subtask.celery_id))
        changed = _time_out(subtask, now) or changed
        changed = _retry(subtask) or changed
        if changed:
            subtask.save()
            touched.add(subtask.task_id)
    return touched


def refresh_task_states(task_ids: set[int] | None = None) -> None:
    """Recompute the state, execution start and finish time of unfinished tasks."""
    query = Task.objects.select_related("queue").prefetch_related("subtasks")
    if task_ids is None:
        query = query.exclude(state__in=[s.value for s in TERMINAL_TASK_STATES])
    else:
        query = query.filter(id__in=task_ids)
    for task in query:
        subtasks = list(task.subtasks.all())
        in_flight = [s.dispatched_ms is not None and s.state not in _TERMINAL for s in subtasks]
        state = task_state_of([s.state for s in subtasks], in_flight, task.queue.state)
        starts = [s.start_ms for s in subtasks if s.start_ms]
        finish = (max((s.finish_ms or 0) for s in subtasks) or now_ms()) if (
            state in TERMINAL_TASK_STATES) else None  # fmt: skip
        fields = {"state": state.value, "execution_start_ms": min(starts) if starts else None,
                  "finish_ms": finish}  # fmt: skip
        if any(getattr(task, key) != value for key, value in fields.items()):
            Task.objects.filter(pk=task.pk).update(**fields)


def info_for_api(info: str) -> str:
    """``info`` cut to INFO_LIMIT characters for the API. Its first line (a traceback's
    header, or the message) and its tail are kept: a traceback's last lines name the
    exception and where it was raised, so the middle frames are what goes. The cut is marked
    by an indented line, so the console's error headline never reads it as the error."""
    if len(info) <= INFO_LIMIT:
        return info
    head = info.partition("\n")[0][:INFO_HEAD_LIMIT]
    # the marker's length with the largest possible count bounds the real one
    room = INFO_LIMIT - len(head) - len(_cut_marker(len(info)))
    tail = info[len(info) - room :]
    newline = tail.find("\n")
    if 0 <= newline < INFO_LINE_SLACK:
        tail = tail[newline + 1 :]  # start the tail at a whole line
    return head + _cut_marker(len(info) - len(head) - len(tail)) + tail


def _cut_marker(cut: int) -> str:
    return f"\n  ... ({cut} characters cut) ...\n"
