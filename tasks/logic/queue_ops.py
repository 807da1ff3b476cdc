"""Stop, resume, clean up and delete a task type's queue, and delete one task."""

from __future__ import annotations

from controller.errors import BadRequest, NotFound
from tasks.logic.celery_link import revoke_attempt
from tasks.logic.sync import refresh_task_states
from tasks.models import Subtask, Task, TaskQueue
from tasks.states import (
    BLOCKING_QUEUE_STATES,
    TERMINAL_SUBTASK_STATES,
    TERMINAL_TASK_STATES,
    TaskState,
)

_TERMINAL_SUBTASKS = [s.value for s in TERMINAL_SUBTASK_STATES]


def get_queue(task_type: str) -> TaskQueue:
    queue = TaskQueue.objects.filter(task_type=task_type).first()
    if queue is None:
        raise NotFound(f"Task type: {task_type} does not exist (no task of it was scheduled)")
    return queue


def stop_queue(task_type: str) -> dict:
    """No new attempt is sent; attempts already out finish (the tasks are STOPPING meanwhile)."""
    queue = get_queue(task_type)
    TaskQueue.objects.filter(pk=queue.pk).update(state=TaskState.STOPPED.value)
    refresh_task_states(set(queue.tasks.values_list("id", flat=True)))
    return {"status": f"Successfully stopped tasks for task type: {task_type}"}


def resume_queue(task_type: str) -> dict:
    queue = get_queue(task_type)
    TaskQueue.objects.filter(pk=queue.pk).update(state=TaskState.IN_PROGRESS.value)
    refresh_task_states(set(queue.tasks.values_list("id", flat=True)))
    return {"status": f"Successfully resumed tasks for task type: {task_type}"}


def cleanup_queue(task_type: str) -> dict:
    """Remove the queue's finished tasks (Helix's cleanupQueue)."""
    queue = get_queue(task_type)
    queue.tasks.filter(state__in=[s.value for s in TERMINAL_TASK_STATES]).exclude(
        state=TaskState.STOPPED.value
    ).delete()
    return {"status": f"Successfully cleaned up tasks for task type: {task_type}"}


def _revoke_in_flight(subtasks) -> None:
    for subtask in subtasks.filter(dispatched_ms__isnull=False).exclude(
        state__in=_TERMINAL_SUBTASKS
    ):
        revoke_attempt(subtask.celery_id)


def delete_queue(task_type: str, force: bool) -> dict:
    queue = get_queue(task_type)
    busy = queue.tasks.exclude(state__in=[s.value for s in TERMINAL_TASK_STATES]).count()
    if busy and not force and queue.state not in BLOCKING_QUEUE_STATES:
        raise BadRequest(
            f"Task queue TaskQueue_{task_type} has {busy} unfinished task(s); stop it first "
            "(PUT /tasks/{type}/stop) or pass forceDelete=true"
        )
    _revoke_in_flight(Subtask.objects.filter(task__queue=queue))
    queue.delete()
    return {"status": f"Successfully deleted tasks for task type: {task_type}"}


def delete_task(name: str, force: bool) -> dict:
    task = Task.objects.select_related("queue").filter(name=name).first()
    if task is None:
        raise NotFound(f"Task {name} does not exist")
    if not force and task.queue.state not in BLOCKING_QUEUE_STATES:
        raise BadRequest(
            f"Task {name} can be deleted only after its queue is stopped "
            f"(PUT /tasks/{task.task_type}/stop), or with forceDelete=true"
        )
    _revoke_in_flight(task.subtasks.all())
    task.delete()
    return {"status": f"Successfully deleted task: {name}"}
