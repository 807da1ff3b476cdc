"""Pinot's (Helix's) task states and trigger kinds, with the rules that derive one from another.

A *task* is a Helix job (``Task_<Type>_<uuid>_<ms>``); its *subtasks* are the job's
partitions (``<task>_<i>``). The queue of a task type is a Helix workflow
(``TaskQueue_<Type>``) and has a TaskState of its own.
"""

from __future__ import annotations

from enum import StrEnum


class TaskState(StrEnum):
    NOT_STARTED = "NOT_STARTED"
    IN_PROGRESS = "IN_PROGRESS"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    FAILING = "FAILING"
    FAILED = "FAILED"
    COMPLETED = "COMPLETED"
    TIMING_OUT = "TIMING_OUT"
    TIMED_OUT = "TIMED_OUT"
    ABORTED = "ABORTED"


class SubtaskState(StrEnum):
    """Helix's TaskPartitionState. A subtask has no state (None) until a minion takes it."""

    INIT = "INIT"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    COMPLETED = "COMPLETED"
    TIMED_OUT = "TIMED_OUT"
    TASK_ERROR = "TASK_ERROR"
    TASK_ABORTED = "TASK_ABORTED"
    ERROR = "ERROR"
    DROPPED = "DROPPED"


class TriggeredBy(StrEnum):
    CRON_TRIGGER = "CRON_TRIGGER"
    MANUAL_TRIGGER = "MANUAL_TRIGGER"
    ADHOC_TRIGGER = "ADHOC_TRIGGER"
    UNKNOWN = "UNKNOWN"


# a subtask in one of these states runs no more (a retry starts a new attempt)
TERMINAL_SUBTASK_STATES = frozenset(
    {
        SubtaskState.COMPLETED,
        SubtaskState.TIMED_OUT,
        SubtaskState.TASK_ERROR,
        SubtaskState.TASK_ABORTED,
        SubtaskState.ERROR,
        SubtaskState.DROPPED,
        SubtaskState.STOPPED,
    }
)
# attempts that failed and may be retried while maxAttemptsPerTask allows
RETRYABLE_SUBTASK_STATES = frozenset(
    {SubtaskState.TIMED_OUT, SubtaskState.TASK_ERROR, SubtaskState.ERROR}
)
TERMINAL_TASK_STATES = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.TIMED_OUT, TaskState.ABORTED,
     TaskState.STOPPED}
)  # fmt: skip
# the queue refuses new tasks in these states (Pinot: a stopped queue blocks generation)
BLOCKING_QUEUE_STATES = frozenset({TaskState.STOPPING, TaskState.STOPPED})


def task_state_of(
    subtask_states: list[str | None], in_flight: list[bool], queue_state: str
) -> TaskState:
    """A task's state from its subtasks' states, as Helix derives a job's.

    Helix's failure threshold for Pinot's jobs is MAX_INT, so failed subtasks never fail the
    job: it is COMPLETED once every subtask is terminal, whatever their outcome.
    A stopped queue sends nothing new: its tasks are STOPPING while an attempt already sent is
    still out (``in_flight``), then STOPPED.
    """
    running = any(in_flight)
    done = all(state in TERMINAL_SUBTASK_STATES for state in subtask_states)
    if queue_state in BLOCKING_QUEUE_STATES and not done:
        return TaskState.STOPPING if running else TaskState.STOPPED
    if done:
        return TaskState.COMPLETED
    return TaskState.IN_PROGRESS
