"""What the ``/tasks`` read endpoints answer, in Pinot's shapes."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime
from enum import StrEnum

from django.conf import settings
from django.db.models import Q

from controller.errors import NotFound
from engine.spi.secrets import mask_secrets
from tasks.logic.queue_ops import get_queue
from tasks.logic.sync import info_for_api
from tasks.models import Subtask, Task, TaskQueue
from tasks.states import SubtaskState

COUNT_KEYS = ("total", "completed", "running", "waiting", "error", "unknown", "dropped",
              "timedOut", "aborted")  # fmt: skip


def pinot_time(ms: int | None) -> str | None:
    """Pinot's debug time format, ``yyyy-MM-dd HH:mm:ss z``, in UTC (the controller's zone)."""
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def get_task(name: str) -> Task:
    task = Task.objects.filter(name=name).first()
    if task is None:
        raise NotFound(f"Task {name} does not exist")
    return task


def task_types() -> list[str]:
    return list(TaskQueue.objects.values_list("task_type", flat=True))


def queue_state(task_type: str) -> str:
    return get_queue(task_type).state


def task_states(task_type: str, table_name: str | None = None) -> dict[str, str]:
    tasks = get_queue(task_type).tasks.all()
    if table_name:
        tasks = tasks.filter(subtasks__table_name=table_name).distinct()
    return {task.name: task.state for task in tasks}


def pinot_task_config(subtask: Subtask, task_type: str) -> dict:
    return {"taskType": task_type, "configs": mask_secrets(subtask.configs), "taskId": subtask.name,
            "tableName": subtask.table_name}  # fmt: skip


def count_bucket(state: str | None) -> str:
    return {
        None: "waiting", SubtaskState.COMPLETED: "completed", SubtaskState.RUNNING: "running",
        SubtaskState.INIT: "running", SubtaskState.TASK_ERROR: "error",
        SubtaskState.ERROR: "error", SubtaskState.DROPPED: "dropped",
        SubtaskState.TIMED_OUT: "timedOut", SubtaskState.TASK_ABORTED: "aborted",
    }.get(state, "unknown")  # fmt: skip


def subtask_counts(subtasks) -> dict[str, int]:
    counts = Counter(count_bucket(s.state) for s in subtasks)
    return {key: (len(subtasks) if key == "total" else counts[key]) for key in COUNT_KEYS}


def task_counts(task_type: str, states: list[str] | None, table: str | None) -> dict:
    tasks = get_queue(task_type).tasks.prefetch_related("subtasks")
    if states:
        tasks = tasks.filter(state__in=states)
    out = {}
    for task in tasks:
        subtasks = [s for s in task.subtasks.all() if not table or s.table_name == table]
        if table and not subtasks:
            continue
        out[task.name] = subtask_counts(subtasks)
    return out


def _compact(data: dict) -> dict:
    return {key: value for key, value in data.items() if value is not None}


def task_debug(task: Task, verbosity: int = 0, table: str | None = None) -> dict:
    """Pinot's TaskDebugInfo; COMPLETED subtasks only with ``verbosity`` > 0."""
    infos = []
    subtasks = list(task.subtasks.all())
    for subtask in subtasks:
        if table and subtask.table_name != table:
            continue
        if verbosity <= 0 and subtask.state == SubtaskState.COMPLETED:
            continue
        infos.append(_compact({
            "taskId": subtask.name, "state": subtask.state,
            "startTime": pinot_time(subtask.start_ms), "finishTime": pinot_time(subtask.finish_ms),
            "participant": subtask.worker or None, "info": info_for_api(subtask.info) or None,
            "triggeredBy": task.triggered_by,
            "taskConfig": pinot_task_config(subtask, task.task_type),
        }))  # fmt: skip
    return _compact({
        "taskState": task.state, "subtaskCount": subtask_counts(subtasks),
        "startTime": pinot_time(task.created_ms),
        "executionStartTime": pinot_time(task.execution_start_ms),
        "finishTime": pinot_time(task.finish_ms), "triggeredBy": task.triggered_by,
        "subtaskInfos": infos,
    })  # fmt: skip


def type_debug(task_type: str, verbosity: int, table: str | None = None) -> dict:
    tasks = get_queue(task_type).tasks.prefetch_related("subtasks")
    if table:
        tasks = tasks.filter(subtasks__table_name=table).distinct()
    return {task.name: task_debug(task, verbosity, table) for task in tasks}


def runtime_config(task: Task) -> dict:
    return {
        "ConcurrentTasksPerWorker": str(task.concurrency_per_instance),
        "TaskTimeoutMs": str(task.timeout_ms),
        "TaskExpireTimeMs": str(settings.TASK_EXPIRE_TIME_MS),
        "MinionWorkerGroupTag": task.minion_instance_tag,
    }


def subtasks_of(task: Task, names: list[str] | None) -> list[Subtask]:
    subtasks = list(task.subtasks.all())
    if names:
        known = {s.name for s in subtasks}
        missing = [name for name in names if name not in known]
        if missing:
            raise NotFound(f"Subtask(s) {', '.join(missing)} not found in task {task.name}")
        subtasks = [s for s in subtasks if s.name in names]
    return subtasks


def summary(tenant: str | None) -> dict:
    """``/tasks/summary``: running and waiting subtasks per minion tag and type."""
    per_tag: dict[str, Counter] = defaultdict(Counter)
    unfinished = Subtask.objects.filter(Q(state__isnull=True) | Q(state=SubtaskState.RUNNING))
    for sub in unfinished.select_related("task"):
        if tenant and sub.task.minion_instance_tag != tenant:
            continue
        kind = "running" if sub.state == SubtaskState.RUNNING else "waiting"
        per_tag[sub.task.minion_instance_tag][(sub.task.task_type, kind)] += 1
    breakdown = []
    for tag, counts in sorted(per_tag.items()):
        types = sorted({task_type for task_type, _ in counts})
        breakdown.append({
            "tenant": tag,
            "runningTasks": sum(v for (_, k), v in counts.items() if k == "running"),
            "waitingTasks": sum(v for (_, k), v in counts.items() if k == "waiting"),
            "taskTypeBreakdown": [
                {"taskType": t, "runningCount": counts[(t, "running")],
                 "waitingCount": counts[(t, "waiting")]} for t in types
            ],
        })  # fmt: skip
    return {"totalRunningTasks": sum(b["runningTasks"] for b in breakdown),
            "totalWaitingTasks": sum(b["waitingTasks"] for b in breakdown),
            "taskBreakdown": breakdown}  # fmt: skip


class MinionTaskState(StrEnum):
    """The state a Pinot minion's progress observer gives a subtask it ran."""

    UNKNOWN = "UNKNOWN"
    IN_PROGRESS = "IN_PROGRESS"
    SUCCEEDED = "SUCCEEDED"
    CANCELLED = "CANCELLED"
    ERROR = "ERROR"


def minion_task_state(state: str | None) -> MinionTaskState:
    return {
        SubtaskState.INIT: MinionTaskState.IN_PROGRESS,
        SubtaskState.RUNNING: MinionTaskState.IN_PROGRESS,
        SubtaskState.COMPLETED: MinionTaskState.SUCCEEDED,
        SubtaskState.STOPPED: MinionTaskState.CANCELLED,
        SubtaskState.TASK_ABORTED: MinionTaskState.CANCELLED,
        SubtaskState.DROPPED: MinionTaskState.CANCELLED,
        SubtaskState.TASK_ERROR: MinionTaskState.ERROR,
        SubtaskState.ERROR: MinionTaskState.ERROR,
        SubtaskState.TIMED_OUT: MinionTaskState.ERROR,
    }.get(state, MinionTaskState.UNKNOWN)  # fmt: skip


def subtask_progress(subtask: Subtask) -> dict:
    """A subtask as a Pinot minion's progress observer reports it: its state, start and end
    (epoch ms) and its status log. The store keeps the start, the last progress message and
    the outcome, so the log has those entries; the progress message carries no time."""
    state = minion_task_state(subtask.state)
    log = []
    if subtask.start_ms:
        log.append({"ts": subtask.start_ms, "level": "INFO", "status": "Task started",
                    "stage": MinionTaskState.IN_PROGRESS.value})  # fmt: skip
    if subtask.progress:
        log.append({"level": "INFO", "status": subtask.progress,
                    "stage": MinionTaskState.IN_PROGRESS.value})  # fmt: skip
    if subtask.finish_ms and state != MinionTaskState.IN_PROGRESS:
        took = f"{subtask.finish_ms - subtask.start_ms}ms" if subtask.start_ms else "unknown time"
        status, level = {
            MinionTaskState.SUCCEEDED: (f"Task succeeded in {took}", "INFO"),
            MinionTaskState.CANCELLED: (f"Task got cancelled after {took}", "WARN"),
            MinionTaskState.ERROR: (f"Task failed in {took} with error: {subtask.info}", "ERROR"),
        }.get(state, (f"Task ended as {subtask.state} after {took}", "WARN"))  # fmt: skip
        log.append({"ts": subtask.finish_ms, "level": level, "status": status,
                    "stage": state.value})  # fmt: skip
    return _compact({"taskId": subtask.name, "taskState": state.value,
                     "startTs": subtask.start_ms, "endTs": subtask.finish_ms,
                     "progress": log})  # fmt: skip


def worker_progress(
    minion_ids: list[str], state: MinionTaskState | None, selected: list[str] | None
) -> dict[str, dict[str, dict]]:
    """``/tasks/subtask/workers/progress``: per minion (every one of ``minion_ids``, or the
    ``selected`` ones), the subtasks it ran, in ``state`` if given, with their progress.
    An id in ``selected`` that names no minion is a NotFound naming it."""
    if selected:
        unknown = [worker for worker in selected if worker not in minion_ids]
        if unknown:
            raise NotFound(f"Minion instance(s) {', '.join(unknown)} not found; the minions "
                           f"are: {', '.join(sorted(minion_ids)) or 'none'}")  # fmt: skip
        minion_ids = [worker for worker in minion_ids if worker in selected]
    out: dict[str, dict[str, dict]] = {worker: {} for worker in sorted(minion_ids)}
    for subtask in Subtask.objects.filter(worker__in=minion_ids).order_by("worker", "name"):
        if state is None or minion_task_state(subtask.state) == state:
            out[subtask.worker][subtask.name] = subtask_progress(subtask)
    return out
