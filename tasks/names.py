"""Pinot's task names: ``Task_<Type>_<uuid>_<epochMs>``, subtasks ``<task>_<i>``, queues
``TaskQueue_<Type>``. The type is the second ``_``-separated token, so a type name has no
``_``."""

from __future__ import annotations

import re
import uuid

_TYPE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def check_task_type_name(task_type: str) -> str:
    if not _TYPE_RE.match(task_type or ""):
        raise ValueError(
            f"task type {task_type!r} must be letters and digits only (no '_'): Pinot reads "
            "the type back from the second '_'-separated token of a task name"
        )
    return task_type


def queue_name(task_type: str) -> str:
    return f"TaskQueue_{task_type}"


def task_name(task_type: str, now_ms: int, *, prefix: str | None = None,
              suffix: str | None = None) -> str:  # fmt: skip
    """A scheduled task's name; ``taskNamePrefix`` replaces the UUID, ``taskNameSuffix``
    is appended (Pinot's task configs of those names)."""
    middle = prefix or str(uuid.uuid4())
    name = f"Task_{task_type}_{middle}_{now_ms}"
    return f"{name}_{suffix}" if suffix else name


def adhoc_task_name(task_type: str, table_name: str, given: str | None) -> str:
    """An ad-hoc task's name: ``Task_<Type>_<taskName>``, else ``Task_<Type>_<table>_<uuid>``."""
    if given:
        return f"Task_{task_type}_{given}"
    return f"Task_{task_type}_{table_name}_{uuid.uuid4()}"


def subtask_name(task: str, index: int) -> str:
    return f"{task}_{index}"


def task_type_of(name: str) -> str | None:
    """The type in a task or subtask name (None if the name is not a task name)."""
    parts = name.split("_")
    if len(parts) < 3 or parts[0] != "Task":
        return None
    return parts[1]
