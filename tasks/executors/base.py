"""What an executor is given: the subtask's configs and a way to report progress."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass
class SubtaskContext:
    task_type: str
    subtask_name: str
    attempt: int
    configs: dict[str, str]
    worker: str  # the minion instance id
    # report a short progress message (shown by /tasks/subtask/{name}/progress)
    report_progress: Callable[[str], None]

    @property
    def table_name(self) -> str:
        return self.configs.get("tableName", "")


class TaskExecutor:
    """Subclass per task type. ``execute`` returns a JSON-able result; raising fails the
    subtask (TASK_ERROR, with the traceback recorded)."""

    task_type: str = ""

    def execute(self, ctx: SubtaskContext) -> dict:
        raise NotImplementedError
