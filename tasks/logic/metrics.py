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


def _series(name: str, labels: dict[str, str], value: float) -> str:
    text = ",".join(f'{key}="{val}"' for key, val in labels.items())
    return f"pinot_controller_{name}{{{text}}} {value}"


def _table_labels(table: str, task_type: str) -> dict[str, str]:
    raw, _, kind = table.rpartition("_")
    return {"table": raw or table, "tableType": kind if raw else "", "taskType": task_type}


def prometheus_lines(cron_jobs_skipped: int) -> list[str]:
    """The controller's minion task gauges in Prometheus text, under Pinot's names: the
    TaskMetricsEmitter's numbers and the cron scheduler's, computed from the task store and
    the table configs so that every controller serves the same values. ``cron_jobs_skipped``
    is this controller's cron scheduler count of late fires it skipped."""
    from tasks.logic.scheduled_runs import CRON, last_runs
    from tasks.scheduler import configured_schedules

    report = task_metrics()
    lines = ["# TYPE pinot_controller_numMinionTasksInProgress_Value gauge"]
    for task_type, count in sorted(report["numMinionTasksInProgress"].items()):
        lines.append(_series("numMinionTasksInProgress_Value", {"taskType": task_type}, count))
    keys = [*_SERIES.values(), "percentMinionSubtasksInQueue", "percentMinionSubtasksInError"]
    for key in keys:
        lines.append(f"# TYPE pinot_controller_{key}_Value gauge")
        for entry in report["tables"]:
            labels = _table_labels(entry["table"], entry["taskType"])
            lines.append(_series(f"{key}_Value", labels, entry[key]))
    schedules, _ = configured_schedules()
    runs = last_runs(CRON)
    lines.append("# TYPE pinot_controller_cronSchedulerJobScheduled_Value gauge")
    lines += [_series("cronSchedulerJobScheduled_Value", {"table": t, "taskType": k}, 1)
              for t, k in sorted(schedules)]  # fmt: skip
    lines.append("# TYPE pinot_controller_cronSchedulerJobTriggered_Count counter")
    for name, run in sorted(runs.items()):
        table, _, task_type = name.rpartition("/")
        labels = {"table": table, "taskType": task_type}
        lines.append(_series("cronSchedulerJobTriggered_Count", labels, run.runs))
        lines.append(_series("cronSchedulerJobExecutionTimeMs_Last", labels, run.last_duration_ms))
    lines.append("# TYPE pinot_controller_cronSchedulerJobSkipped_Count counter")
    lines.append(f"pinot_controller_cronSchedulerJobSkipped_Count {cron_jobs_skipped}")
    return lines
