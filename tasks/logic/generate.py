"""Generate one table's subtasks of one type and record them as a task (Pinot's
PinotTaskManager#scheduleTask for one table and type)."""

from __future__ import annotations

import logging
from collections import deque
from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction

from engine.clusterstate import ClusterStore
from engine.common.clock import now_ms
from tasks import registry
from tasks.cluster_configs import max_allowed_subtasks, runtime_config
from tasks.errors import GenerationError, SchedulingError, TaskConfigError
from tasks.generators.base import TABLE_NAME_KEY, GenerationContext
from tasks.logic.dispatch import minion_tags
from tasks.logic.generation_lock import generation_lock
from tasks.models import Subtask, Task, TaskQueue
from tasks.names import subtask_name, task_name
from tasks.queues import MinionQueue
from tasks.states import BLOCKING_QUEUE_STATES, TERMINAL_TASK_STATES, TriggeredBy

log = logging.getLogger(__name__)

# the task config keys the framework reads for every type (Pinot's common keys)
SCHEDULE_KEY = "schedule"
MINION_INSTANCE_TAG_KEY = "minionInstanceTag"
TABLE_MAX_NUM_TASKS_KEY = "tableMaxNumTasks"

# Pinot's generator debug info: the last 5 successful runs and errors per table and type
_HISTORY = 5
_generator_runs: dict[tuple[str, str], tuple[deque, deque]] = {}


def generator_history(table_name: str, task_type: str) -> dict:
    ok, errors = _generator_runs.get((table_name, task_type), (deque(), deque()))
    return {"tableNameWithType": table_name, "taskType": task_type,
            "mostRecentSuccessRunTS": list(ok), "mostRecentErrorRunMessages": dict(errors)}  # fmt: skip


def _remember(table_name: str, task_type: str, error: str | None) -> None:
    ok, errors = _generator_runs.setdefault(
        (table_name, task_type), (deque(maxlen=_HISTORY), deque(maxlen=_HISTORY))
    )
    stamp = datetime.now(UTC).isoformat()
    if error is None:
        ok.append(stamp)
    else:
        errors.append((stamp, error))


def minion_tag_of(task_config: dict[str, str]) -> str:
    return MinionQueue.for_tag(task_config.get(MINION_INSTANCE_TAG_KEY))


def controller_url() -> str:
    return settings.CONTROLLER_URL


def queue_state(task_type: str) -> str | None:
    queue = TaskQueue.objects.filter(task_type=task_type).first()
    return queue.state if queue else None


def _table_max_num_tasks(task_config: dict[str, str]) -> int | None:
    raw = task_config.get(TABLE_MAX_NUM_TASKS_KEY)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise TaskConfigError(TABLE_MAX_NUM_TASKS_KEY, f"must be an integer, got {raw!r}") from None
    return value if value > 0 else None


def _incomplete_configs(table_name: str, task_type: str):
    def read() -> list[dict[str, str]]:
        return list(
            Subtask.objects.filter(task__task_type=task_type, table_name=table_name)
            .exclude(task__state__in=[s.value for s in TERMINAL_TASK_STATES])
            .values_list("configs", flat=True)
        )

    return read


def generate_task(
    store: ClusterStore,
    task_type: str,
    table_config: dict,
    table_name: str,
    task_config: dict[str, str],
    triggered_by: TriggeredBy,
    *,
    name: str | None = None,
) -> str | None:
    """Generate and record one task; its name, or None when there was nothing to do.

    GenerationError/TaskConfigError when the generator cannot run, SchedulingError when the
    subtasks cannot be submitted (stopped queue, too many subtasks)."""
    try:
        created = _generate(store, task_type, table_config, table_name, task_config,
                            triggered_by, name)  # fmt: skip
    except Exception as exc:
        _remember(table_name, task_type, str(exc))
        raise
    _remember(table_name, task_type, None)
    return created


def _generate(store, task_type, table_config, table_name, task_config, triggered_by, name):
    adhoc = triggered_by == TriggeredBy.ADHOC_TRIGGER
    generator = registry.generator(task_type)
    generator.validate(table_config, task_config)
    tag = minion_tag_of(task_config)
    if tag not in minion_tags(store):
        raise GenerationError(f"No minion instance found with tag: {tag}")
    cluster_config = store.cluster_config()
    runtime = runtime_config(cluster_config, task_type, tag)
    state = queue_state(task_type)
    if state in BLOCKING_QUEUE_STATES:
        raise SchedulingError(f"task queue TaskQueue_{task_type} is {state}; resume it first")
    with generation_lock(store, table_name, task_type):
        ctx = GenerationContext(store, table_name, now_ms(), triggered_by, controller_url(),
                                _incomplete_configs(table_name, task_type))  # fmt: skip
        make = generator.generate_adhoc if adhoc else generator.generate
        configs = [
            {str(k): str(v) for k, v in config.items()}
            for config in make(ctx, table_config, task_config)
        ]
        if not adhoc:
            limit = _table_max_num_tasks(task_config)
            configs = configs[:limit] if limit else configs
        cap = max_allowed_subtasks(cluster_config)
        if cap is not None and len(configs) > cap:
            if triggered_by == TriggeredBy.CRON_TRIGGER:
                log.warning("%s on %s: %d subtasks truncated to %d", task_type, table_name,
                            len(configs), cap)  # fmt: skip
                configs = configs[:cap]
            else:
                raise SchedulingError(
                    f"{task_type} on {table_name} generated {len(configs)} subtasks, more than "
                    f"the cluster config minion.maxAllowedSubTasksPerTask={cap}; raise it or "
                    "lower the table's tableMaxNumTasks"
                )
        if not configs:
            return None
        return _record(task_type, table_name, tag, runtime, triggered_by, configs,
                       name or task_name(task_type, ctx.now_ms,
                                         prefix=task_config.get("taskNamePrefix"),
                                         suffix=task_config.get("taskNameSuffix")))  # fmt: skip


@transaction.atomic
def _record(task_type, table_name, tag, runtime, triggered_by, configs, name) -> str:
    queue, _ = TaskQueue.objects.get_or_create(task_type=task_type,
                                               defaults={"created_ms": now_ms()})  # fmt: skip
    task = Task.objects.create(
        name=name, queue=queue, task_type=task_type, table_name=table_name,
        triggered_by=triggered_by.value, minion_instance_tag=tag,
        timeout_ms=runtime.timeout_ms, max_attempts=runtime.max_attempts,
        concurrency_per_instance=runtime.concurrency_per_instance, created_ms=now_ms(),
    )  # fmt: skip
    Subtask.objects.bulk_create(
        Subtask(task=task, name=subtask_name(name, index), index=index,
                table_name=config.setdefault(TABLE_NAME_KEY, table_name), configs=config)
        for index, config in enumerate(configs)
    )  # fmt: skip
    log.info("task %s: %d subtask(s) of %s on %s (%s)", name, len(configs), task_type,
             table_name, triggered_by.value)  # fmt: skip
    return name
