"""What ``/tasks/scheduler/*`` answers, in the shape of Pinot's Quartz data. Derived from the
table configs and the recorded fires, so every controller answers the same."""

from __future__ import annotations

import datetime as dt
from importlib.metadata import version

from django.conf import settings

from controller.errors import NotFound
from tasks.cron import describe, quartz_trigger
from tasks.logic.scheduled_runs import CRON, last_run
from tasks.scheduler import CronScheduler, configured_schedules

JOB_CLASS = "tasks.scheduler.CronScheduler"


def _enabled() -> None:
    if not settings.TASK_SCHEDULER_ENABLED:
        raise NotFound("Task scheduler is disabled")


def information(cron: CronScheduler, instance_id: str) -> dict:
    _enabled()
    schedules, _ = configured_schedules()
    started = cron.started_at
    return {
        "Version": version("apscheduler"), "SchedulerName": "APScheduler",
        "SchedulerInstanceId": instance_id, "Started": cron.running,
        "RunningSince": int(started.timestamp() * 1000) if started else None,
        "NumberOfJobs": len(schedules), "NumberOfMissedFires": cron.missed,
        "JobGroupNames": sorted({task_type for _, task_type in schedules}),
    }  # fmt: skip


def job_keys() -> list[dict]:
    _enabled()
    schedules, _ = configured_schedules()
    return [{"name": table, "group": task_type} for table, task_type in sorted(schedules)]


def job_details(table: str, task_type: str) -> dict:
    _enabled()
    schedules, errors = configured_schedules()
    key = (table, task_type)
    if key not in schedules:
        reason = errors.get(key) or f"table {table} has no {task_type} schedule"
        raise NotFound(f"No cron job for {task_type} on {table}: {reason}")
    expression = schedules[key]
    now = dt.datetime.now(dt.UTC)
    upcoming = quartz_trigger(expression).get_next_fire_time(None, now)
    fired = last_run(CRON, f"{table}/{task_type}")
    return {
        "JobKey": {"name": table, "group": task_type},
        "Description": f"schedules {task_type} on {table}",
        "JobClass": JOB_CLASS,
        "JobDataMap": {"tableWithType": table, "taskType": task_type},
        "Triggers": [{
            "TriggerType": "CronTrigger", "TimeZone": "UTC", "CronExpression": expression,
            "ExpressionSummary": describe(expression),
            "NextFireTime": int(upcoming.timestamp() * 1000) if upcoming else None,
            "PreviousFireTime": fired.last_start_ms if fired else None,
        }],
    }  # fmt: skip
