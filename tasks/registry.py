"""Task types: a generator (controller side) and an executor (minion side) joined by a type
string, as Pinot pairs a PinotTaskGenerator with a PinotTaskExecutorFactory.

Adding a type takes two files and one registration::

    # tasks/generators/my_task.py  -> class MyTaskGenerator(TaskGenerator)
    # tasks/executors/my_task.py   -> class MyTaskExecutor(TaskExecutor)
    register("MyTask", generator="tasks.generators.my_task:MyTaskGenerator",
             executor="tasks.executors.my_task:MyTaskExecutor")

Built-in types register in ``tasks.builtin``. Other modules that register types are listed in
``settings.MINION_TASK_PLUGINS`` (``$SPRIG_MINION_TASK_PLUGINS``, comma-separated) and are
imported by the controller and by every minion, so both sides know the same types. The
classes are imported lazily: the controller never imports an executor's Spark code.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading

from tasks.names import check_task_type_name


class UnknownTaskTypeError(LookupError):
    def __init__(self, task_type: str):
        self.task_type = task_type
        super().__init__(
            f"Task type: {task_type} is not registered; known types: {', '.join(task_types())}"
        )


@dataclasses.dataclass(frozen=True)
class TaskType:
    name: str
    generator: str  # "module:Class"
    executor: str  # "module:Class"


_types: dict[str, TaskType] = {}
_lock = threading.Lock()


def register(name: str, *, generator: str, executor: str) -> TaskType:
    """Register (or replace) a task type by name."""
    entry = TaskType(check_task_type_name(name), generator, executor)
    with _lock:
        _types[name] = entry
    return entry


def unregister(name: str) -> None:
    with _lock:
        _types.pop(name, None)


def task_types() -> list[str]:
    with _lock:
        return sorted(_types)


def task_type(name: str) -> TaskType:
    with _lock:
        entry = _types.get(name)
    if entry is None:
        raise UnknownTaskTypeError(name)
    return entry


def _load(path: str):
    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def generator(name: str):
    """A new generator instance for the type."""
    return _load(task_type(name).generator)()


def executor(name: str):
    """A new executor instance for the type."""
    return _load(task_type(name).executor)()


def load_plugins(modules: list[str]) -> None:
    """Import the modules that register task types (settings.MINION_TASK_PLUGINS)."""
    for module in modules:
        importlib.import_module(module)
