"""TestTask's generator: ``numSubtasks`` subtasks per table, none while an earlier TestTask on
the table is unfinished; it counts its runs in the table's task metadata (a watermark)."""

from __future__ import annotations

from engine.clusterstate import ZNRecord
from tasks.errors import TaskConfigError
from tasks.generators.base import GenerationContext, TaskGenerator
from tasks.metadata import read_metadata, write_metadata

# the executor's knobs, passed through to every subtask
PASS_THROUGH = ("sleepMs", "sleepAttempts", "failIndex", "failAttempts")


def _int(task_config: dict[str, str], key: str, default: int, minimum: int) -> int:
    raw = task_config.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise TaskConfigError(f"TestTask.{key}", f"must be an integer, got {raw!r}") from None
    if value < minimum:
        raise TaskConfigError(f"TestTask.{key}", f"must be at least {minimum}, got {value}")
    return value


class TestTaskGenerator(TaskGenerator):
    task_type = "TestTask"

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        _int(task_config, "numSubtasks", 2, 1)
        for key in PASS_THROUGH:
            _int(task_config, key, 0, 0)

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        if ctx.incomplete_subtask_configs():
            return []
        record, version = read_metadata(ctx.store, ctx.table_name, self.task_type)
        record = record or ZNRecord(id=ctx.table_name)
        runs = int(record.simple_fields.get("runs", "0")) + 1
        record.simple_fields.update(runs=str(runs), watermarkMs=str(ctx.now_ms))
        write_metadata(ctx.store, ctx.table_name, self.task_type, record, version)
        extra = {key: task_config[key] for key in PASS_THROUGH if key in task_config}
        return [
            {"index": str(i), "run": str(runs), **extra}
            for i in range(_int(task_config, "numSubtasks", 2, 1))
        ]
