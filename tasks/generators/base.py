"""What a generator is given and what it returns.

A generator turns one table's config (its ``task.taskTypeConfigsMap.<Type>`` entry plus
whatever else of the table and cluster it needs) into subtask configs: one dict of string
values per subtask, as Pinot's PinotTaskConfig has. It must not write anything but its own
watermarks; the framework names, records and dispatches the subtasks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from engine.clusterstate import ClusterStore
from tasks.states import TriggeredBy

# Pinot's MinionConstants keys every subtask config carries
TABLE_NAME_KEY = "tableName"
UPLOAD_URL_KEY = "uploadURL"


@dataclasses.dataclass
class GenerationContext:
    store: ClusterStore
    table_name: str  # with type
    now_ms: int
    triggered_by: TriggeredBy
    controller_url: str
    # the configs of this table's subtasks of this type whose task is not finished
    incomplete_subtask_configs: Callable[[], list[dict[str, str]]]


class TaskGenerator:
    """Subclass per task type; the class attribute ``task_type`` is the joining string."""

    task_type: str = ""

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        """Raise TaskConfigError naming the key of a wrong value; the default accepts all."""

    def generate(
        self, ctx: GenerationContext, table_config: dict, task_config: dict[str, str]
    ) -> list[dict[str, str]]:
        raise NotImplementedError

    def generate_adhoc(
        self, ctx: GenerationContext, table_config: dict, task_config: dict[str, str]
    ) -> list[dict[str, str]]:
        """An ad-hoc run (``POST /tasks/execute``); ``task_config`` already holds the
        request's overrides. The default is a scheduled run with those configs."""
        return self.generate(ctx, table_config, task_config)


def table_task_config(table_config: dict, task_type: str) -> dict[str, str] | None:
    """The table's ``task.taskTypeConfigsMap.<type>`` entry (values as strings), or None."""
    task = table_config.get("task") or {}
    configs = (task.get("taskTypeConfigsMap") or {}).get(task_type)
    if configs is None:
        return None
    return {str(k): str(v) for k, v in configs.items()}


def configured_task_types(table_config: dict) -> list[str]:
    task = table_config.get("task") or {}
    return sorted((task.get("taskTypeConfigsMap") or {}).keys())
