"""The controller's record of minion tasks: one queue per task type, its tasks, their subtasks.

Times are epoch milliseconds, as Pinot reports them. A subtask's ``state`` is None until a
minion takes it (Helix's partition state is null until assigned).
"""

from __future__ import annotations

from django.db import models

from tasks.states import TaskState, TriggeredBy


class TaskQueue(models.Model):
    """Pinot's ``TaskQueue_<Type>``: exists once a task of the type was scheduled."""

    task_type = models.CharField(max_length=128, unique=True)
    state = models.CharField(max_length=16, default=TaskState.IN_PROGRESS.value)
    created_ms = models.BigIntegerField()

    class Meta:
        ordering = ["task_type"]

    def __str__(self) -> str:
        return f"TaskQueue_{self.task_type}"


class Task(models.Model):
    """One Helix job: the subtasks generated for one table in one scheduling run."""

    name = models.CharField(max_length=512, unique=True)
    queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="tasks")
    task_type = models.CharField(max_length=128, db_index=True)
    table_name = models.CharField(max_length=255, db_index=True, help_text="with type")
    state = models.CharField(max_length=16, default=TaskState.IN_PROGRESS.value, db_index=True)
    triggered_by = models.CharField(max_length=16, default=TriggeredBy.UNKNOWN.value)
    minion_instance_tag = models.CharField(max_length=255)
    timeout_ms = models.BigIntegerField()
    max_attempts = models.PositiveIntegerField(default=1)
    concurrency_per_instance = models.PositiveIntegerField(default=1)
    created_ms = models.BigIntegerField(db_index=True)
    execution_start_ms = models.BigIntegerField(null=True)
    finish_ms = models.BigIntegerField(null=True, db_index=True)

    class Meta:
        ordering = ["created_ms", "id"]

    def __str__(self) -> str:
        return self.name


class Subtask(models.Model):
    """One Helix task partition: ``<task>_<i>``, run by one minion per attempt."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="subtasks")
    name = models.CharField(max_length=600, unique=True)
    index = models.PositiveIntegerField()
    table_name = models.CharField(max_length=255)
    configs = models.JSONField(help_text="the PinotTaskConfig configs (string values)")
    state = models.CharField(max_length=16, null=True, blank=True, db_index=True)
    attempts = models.PositiveIntegerField(default=0, help_text="attempts dispatched so far")
    celery_id = models.CharField(max_length=700, blank=True, help_text="the current attempt's id")
    dispatched_ms = models.BigIntegerField(null=True)
    worker = models.CharField(max_length=255, blank=True, help_text="minion instance id")
    start_ms = models.BigIntegerField(null=True)
    finish_ms = models.BigIntegerField(null=True)
    progress = models.TextField(blank=True)
    info = models.TextField(blank=True, help_text="the error with its full traceback")
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["task_id", "index"]

    def __str__(self) -> str:
        return self.name


class ScheduledRun(models.Model):
    """The last run of a controller periodic task (``kind`` periodic, ``name`` its name) or of
    a table's cron schedule (``kind`` cron, ``name`` ``<tableNameWithType>/<TaskType>``), so
    every controller and the console can show when it ran, how long it took and how it went."""

    kind = models.CharField(max_length=16)
    name = models.CharField(max_length=512)
    last_start_ms = models.BigIntegerField()
    last_duration_ms = models.BigIntegerField(default=0)
    successful = models.BooleanField(default=True)
    message = models.TextField(blank=True, help_text="the error of a failed run")
    runs = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["kind", "name"]
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="unique_run_name")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"
