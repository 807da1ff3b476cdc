"""The task framework's rules that need no service: names, states, cluster config lookup,
registration, and the expiry of finished tasks."""

from __future__ import annotations

import pytest

from tasks import registry
from tasks.cluster_configs import max_allowed_subtasks, runtime_config
from tasks.errors import TaskConfigError
from tasks.names import adhoc_task_name, check_task_type_name, subtask_name, task_name, task_type_of
from tasks.states import TaskState, task_state_of


def test_names_follow_pinot():
    name = task_name("MergeRollupTask", 1700000000000)
    prefix, task_type, middle, millis = name.split("_")
    assert (prefix, task_type, millis) == ("Task", "MergeRollupTask", "1700000000000")
    assert len(middle) == 36  # a UUID
    assert task_name("X", 5, prefix="nightly", suffix="v2") == "Task_X_nightly_5_v2"
    assert subtask_name(name, 3) == f"{name}_3"
    assert task_type_of(subtask_name(name, 3)) == "MergeRollupTask"
    assert adhoc_task_name("X", "t_OFFLINE", "mine") == "Task_X_mine"
    assert adhoc_task_name("X", "t_OFFLINE", None).startswith("Task_X_t_OFFLINE_")
    with pytest.raises(ValueError, match="no '_'"):
        check_task_type_name("Bad_Type")


def test_task_state_follows_helix():
    running, done = ["RUNNING", None], ["COMPLETED", "TASK_ERROR"]
    assert task_state_of(running, [True, False], "IN_PROGRESS") == TaskState.IN_PROGRESS
    # failed subtasks never fail a Pinot job (failure threshold MAX_INT)
    assert task_state_of(done, [False, False], "IN_PROGRESS") == TaskState.COMPLETED
    assert task_state_of(running, [True, False], "STOPPED") == TaskState.STOPPING
    assert task_state_of([None, None], [False, False], "STOPPED") == TaskState.STOPPED


def test_cluster_configs_by_tag_then_type_then_default():
    configs = {"T.timeoutMs": "1000", "T.gpu.timeoutMs": "2000", "T.maxAttemptsPerTask": "3"}
    assert runtime_config(configs, "T", "minion_untagged").timeout_ms == 1000
    assert runtime_config(configs, "T", "gpu").timeout_ms == 2000
    assert runtime_config(configs, "T", "gpu").max_attempts == 3
    assert runtime_config({}, "T", "x").concurrency_per_instance == 1
    assert runtime_config({}, "T", "x").timeout_ms == 3_600_000
    with pytest.raises(TaskConfigError, match=r"'T\.numConcurrentTasksPerInstance'"):
        runtime_config({"T.numConcurrentTasksPerInstance": "two"}, "T", "x")
    with pytest.raises(TaskConfigError, match="must be positive"):
        runtime_config({"T.timeoutMs": "0"}, "T", "x")
    assert max_allowed_subtasks({"minion.maxAllowedSubTasksPerTask": "-1"}) is None
    assert max_allowed_subtasks({"minion.maxAllowedSubTasksPerTask": "5"}) == 5


def test_registration_joins_generator_and_executor_by_type():
    registry.register("UnitTask", generator="tests.tasks.example.generator:TestTaskGenerator",
                      executor="tests.tasks.example.executor:TestTaskExecutor")  # fmt: skip
    try:
        assert "UnitTask" in registry.task_types()
        assert registry.generator("UnitTask").task_type == "TestTask"
        assert registry.executor("UnitTask").execute
    finally:
        registry.unregister("UnitTask")
    with pytest.raises(registry.UnknownTaskTypeError, match="UnitTask is not registered"):
        registry.generator("UnitTask")
    assert "SegmentGenerationAndPushTask" in registry.task_types()


@pytest.mark.django_db
def test_finished_tasks_expire(settings):
    from tasks.logic.driver import expire_tasks
    from tasks.models import Subtask, Task, TaskQueue

    settings.TASK_EXPIRE_TIME_MS = 1000
    settings.TASK_TERMINAL_STATE_EXPIRE_TIME_MS = 5000
    queue = TaskQueue.objects.create(task_type="T", created_ms=0)

    def task(name, state, finish_ms):
        row = Task.objects.create(name=name, queue=queue, task_type="T", table_name="t_OFFLINE",
                                  state=state, minion_instance_tag="m", timeout_ms=1,
                                  created_ms=0, finish_ms=finish_ms)  # fmt: skip
        Subtask.objects.create(task=row, name=f"{name}_0", index=0, table_name="t_OFFLINE",
                               configs={})  # fmt: skip

    now = 100_000
    task("old_done", "COMPLETED", now - 2000)
    task("new_done", "COMPLETED", now - 500)
    task("old_failed", "FAILED", now - 6000)
    task("recent_failed", "FAILED", now - 2000)
    task("running", "IN_PROGRESS", None)
    expire_tasks(now)
    assert sorted(Task.objects.values_list("name", flat=True)) == [
        "new_done", "recent_failed", "running"]  # fmt: skip
    assert Subtask.objects.count() == 3
