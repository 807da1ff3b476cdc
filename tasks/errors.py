"""The task framework's exception tree."""

from __future__ import annotations


class TaskFrameworkError(Exception):
    """Base of every error the task framework raises on purpose."""


class TaskConfigError(TaskFrameworkError):
    """A task config value is missing or wrong; ``key`` names it."""

    def __init__(self, key: str, message: str):
        self.key = key
        self.message = message
        super().__init__(f"Invalid task config '{key}': {message}")


class GenerationError(TaskFrameworkError):
    """A generator could not produce the subtasks of one table and type."""


class SchedulingError(TaskFrameworkError):
    """Subtasks were generated but could not be submitted."""


class SubtaskFailedError(TaskFrameworkError):
    """An executor's work failed in a way it detected itself (e.g. an upload was refused)."""
