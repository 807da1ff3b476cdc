"""What the task queue page needs and the ``/tasks`` API does not answer: the tables that ran
tasks of a type, whether or not the type is in their config (Pinot's UI lists only the tables
configured for the type, so a table that ran ad-hoc tasks is hidden; PR #16968)."""

from __future__ import annotations

from django.db.models import Count, Max

from tasks import registry
from tasks.models import Task


def tables_that_ran(task_type: str) -> list[dict]:
    """``[{"table": tableNameWithType, "tasks": n, "lastCreatedMs": ms}]`` for every table
    with a recorded task of ``task_type``, by table name. Read-only."""
    rows = (
        Task.objects.filter(task_type=task_type)
        .values("table_name")
        .annotate(tasks=Count("id"), last=Max("created_ms"))
        .order_by("table_name")
    )
    return [{"table": r["table_name"], "tasks": r["tasks"], "lastCreatedMs": r["last"]}
            for r in rows]  # fmt: skip


def registered_task_types() -> list[str]:
    """Task types this controller can generate (built-in and plugins), with or without a
    queue yet: a type gets its queue only when its first task is scheduled."""
    return registry.task_types()
