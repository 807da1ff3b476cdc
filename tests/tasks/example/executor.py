"""TestTask's executor: sleeps ``sleepMs`` reporting progress (only while its attempt is at
most ``sleepAttempts``, when given), fails subtask ``failIndex``
(while its attempt is at most ``failAttempts``), else returns what it did."""

from __future__ import annotations

import time

from tasks.executors.base import SubtaskContext, TaskExecutor


class TestTaskFailure(RuntimeError):
    pass


class TestTaskExecutor(TaskExecutor):
    task_type = "TestTask"

    def execute(self, ctx: SubtaskContext) -> dict:
        index = int(ctx.configs["index"])
        sleep_ms = int(ctx.configs.get("sleepMs", "0"))
        if ctx.attempt > int(ctx.configs.get("sleepAttempts", str(ctx.attempt))):
            sleep_ms = 0
        deadline = time.monotonic() + sleep_ms / 1000
        while time.monotonic() < deadline:
            ctx.report_progress(f"sleeping, {int((deadline - time.monotonic()) * 1000)} ms left")
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        fail_index = ctx.configs.get("failIndex")
        failing = fail_index is not None and int(fail_index) == index
        if failing and ctx.attempt <= int(ctx.configs.get("failAttempts", "1")):
            raise TestTaskFailure(f"subtask {ctx.subtask_name} fails on attempt {ctx.attempt}")
        ctx.report_progress("done")
        return {"table": ctx.table_name, "index": index, "attempt": ctx.attempt}
