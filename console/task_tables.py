"""What the task queue page needs and the ``/tasks`` API does not answer: the tables that ran
tasks of a type, whether or not the type is in their config (Pinot's UI lists only the tables
configured for the type, so a table that ran ad-hoc tasks is hidden; PR #16968)."""

from __future__ import annotations

from tasks import registry
from tasks.models import Task


def tables_that_ran(task_type: str) -> list[str]:
    """The tables (names with type) with a recorded task of ``task_type``, sorted. The page
    reads their task counts live from ``/tasks/<type>/<table>/state``. Read-only."""
    rows = Task.objects.filter(task_type=task_type).values_list("table_name", flat=True)
    return sorted(set(rows))


def registered_task_types() -> list[str]:
    """Task types this controller can generate (built-in and plugins), with or without a
    queue yet: a type gets its queue only when its first task is scheduled."""
    return registry.task_types()
