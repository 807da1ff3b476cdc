"""Per-type task settings from the cluster configs (``POST /cluster/configs``), looked up as
Pinot does: ``<Type>.<minionTag>.<suffix>``, then ``<Type>.<suffix>``, then the default."""

from __future__ import annotations

import dataclasses

from tasks.errors import TaskConfigError

TIMEOUT_MS = "timeoutMs"
NUM_CONCURRENT_TASKS_PER_INSTANCE = "numConcurrentTasksPerInstance"
MAX_ATTEMPTS_PER_TASK = "maxAttemptsPerTask"
# cluster-wide cap on the subtasks of one task: scheduled runs truncate, manual/adhoc fail
MAX_ALLOWED_SUB_TASKS = "minion.maxAllowedSubTasksPerTask"

_DEFAULTS = {TIMEOUT_MS: 3_600_000, NUM_CONCURRENT_TASKS_PER_INSTANCE: 1, MAX_ATTEMPTS_PER_TASK: 1}


@dataclasses.dataclass(frozen=True)
class TaskRuntimeConfig:
    timeout_ms: int
    concurrency_per_instance: int
    max_attempts: int


def _positive_int(cluster_config: dict[str, str], key: str) -> int | None:
    raw = cluster_config.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise TaskConfigError(key, f"cluster config must be an integer, got {raw!r}") from None
    if value <= 0:
        raise TaskConfigError(key, f"cluster config must be positive, got {value}")
    return value


def task_setting(cluster_config: dict[str, str], task_type: str, tag: str, suffix: str) -> int:
    for key in (f"{task_type}.{tag}.{suffix}", f"{task_type}.{suffix}"):
        value = _positive_int(cluster_config, key)
        if value is not None:
            return value
    return _DEFAULTS[suffix]


def runtime_config(cluster_config: dict[str, str], task_type: str, tag: str) -> TaskRuntimeConfig:
    """TaskConfigError naming the cluster config key when a value is not a positive integer."""
    return TaskRuntimeConfig(
        timeout_ms=task_setting(cluster_config, task_type, tag, TIMEOUT_MS),
        concurrency_per_instance=task_setting(
            cluster_config, task_type, tag, NUM_CONCURRENT_TASKS_PER_INSTANCE
        ),
        max_attempts=task_setting(cluster_config, task_type, tag, MAX_ATTEMPTS_PER_TASK),
    )


def max_allowed_subtasks(cluster_config: dict[str, str]) -> int | None:
    """The cap, or None for unlimited (unset or <= 0)."""
    raw = cluster_config.get(MAX_ALLOWED_SUB_TASKS)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise TaskConfigError(
            MAX_ALLOWED_SUB_TASKS, f"cluster config must be an integer, got {raw!r}"
        ) from None
    return value if value > 0 else None
