"""The controller's periodic tasks: a registry that other apps extend.

Register a task (e.g. from an AppConfig.ready())::

    from cluster.periodic import PeriodicTask, register

    register(PeriodicTask("PinotTaskManager", run=my_run, default_frequency="1h"))

``run(store, rows)`` gets a ClusterStore and the TableConfig rows to work on (every table, or
the one named by ``/periodictask/run?tableName=&type=``) and returns a JSON-able report.
Frequencies come from ``settings.PERIODIC_TASK_FREQUENCIES[name]`` (Pinot period strings),
else ``default_frequency``. Scheduled runs happen only on the leading controller.
"""

from cluster.periodic.registry import (
    PeriodicTask,
    frequency_seconds,
    get_task,
    register,
    run_task,
    task_names,
)

__all__ = ["PeriodicTask", "frequency_seconds", "get_task", "register", "run_task", "task_names"]
