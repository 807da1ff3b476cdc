"""The numbers Pinot's TaskMetricsEmitter reports: tasks in progress per type, and per table
and type the subtasks running, waiting, in error (and the rest), with the percentages of
subtasks still queued and in error."""

from __future__ import annotations

from collections import Counter, defaultdict

from tasks.logic.task_info import count_bucket
from tasks.models import Subtask, Task
from tasks.states import TaskState

_SERIES = {"running": "numMinionSubtasksRunning", "waiting": "numMinionSubtasksWaiting",
           "error": "numMinionSubtasksError", "unknown": "numMinionSubtasksUnknown",
           "dropped": "numMinionSubtasksDropped", "timedOut": "numMinionSubtasksTimedOut",
           "aborted": "numMinionSubtasksAborted"}  # fmt: skip


def task_metrics(tables: list[str] | None = None) -> dict:
    in_progress = Counter(
        Task.objects.filter(state=TaskState.IN_PROGRESS.value).values_list("task_type", flat=True)
    )
    per_table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    subtasks = Subtask.objects.exclude(task__state__in=[TaskState.COMPLETED.value])
    if tables is not None:
        subtasks = subtasks.filter(table_name__in=tables)
    for table, task_type, state in subtasks.values_list("table_name", "task__task_type", "state"):
        per_table[(table, task_type)][count_bucket(state)] += 1
    tables_out = []
    for (table, task_type), counts in sorted(per_table.items()):
        total = sum(counts.values()) or 1
        entry = {"table": table, "taskType": task_type}
        entry.update({series: counts[bucket] for bucket, series in _SERIES.items()})
        entry["percentMinionSubtasksInQueue"] = round(
            100.0 * (counts["running"] + counts["waiting"]) / total, 2)  # fmt: skip
        entry["percentMinionSubtasksInError"] = round(100.0 * counts["error"] / total, 2)
        tables_out.append(entry)
    return {"numMinionTasksInProgress": dict(in_progress), "tables": tables_out}
